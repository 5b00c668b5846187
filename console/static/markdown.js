// A small, safe Markdown renderer: it builds DOM nodes with createElement
// and textContent only, never an HTML parser, so untrusted text cannot inject
// markup. Supported: paragraphs, headings, fenced and inline code, bold,
// italic, links (http, https and mailto only), lists, block quotes, rules.
//
// It takes time linear in its input whatever the input: block quotes nest
// at most maxDepth deep (deeper ones are shown as text), inline markup is
// found in one forward pass that never searches the same text twice for a
// delimiter, and no regular expression here can backtrack over a line more
// than a bounded number of times. update re-renders a growing text (a
// streamed answer) from its last top-level blank line only.
"use strict";
(function () {
  const maxDepth = 16; // nested block quotes (and inline markup) deeper than this are text

  function el(tag, cls) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    return e;
  }
  function text(parent, s) { parent.appendChild(document.createTextNode(s)); }

  function safeHref(u) {
    try {
      const url = new URL(u, location.href);
      if (url.protocol === "http:" || url.protocol === "https:" || url.protocol === "mailto:") return url.href;
    } catch (_) { /* not a URL */ }
    return null;
  }

  const space = /\s/;
  const lineEnd = /[\n\r\u2028\u2029]/; // what "." does not match
  const isSpace = (c) => space.test(c);
  const isWord = (c) => (c >= "a" && c <= "z") || (c >= "A" && c <= "Z") || (c >= "0" && c <= "9");

  // finder returns the index of re's next match in s at or after i (-1 for
  // none). It remembers its last answer, which stays right for every i up to
  // it: the inline scan asks with growing i, so each search covers new text.
  function finder(s, re) {
    let from = -1, at = -1;
    return (i) => {
      if (from < 0 || i < from || (at >= 0 && i > at)) {
        re.lastIndex = i;
        const m = re.exec(s);
        from = i;
        at = m ? m.index : -1;
      }
      return at;
    };
  }

  // closer finds, for code spans, the first run of exactly k backticks that
  // starts after i: the runs of s are listed once, by length.
  function closer(s) {
    const runs = new Map();
    const re = /`+/g;
    for (let m; (m = re.exec(s));) {
      const l = runs.get(m[0].length);
      if (l) l.push(m.index); else runs.set(m[0].length, [m.index]);
    }
    return (k, i) => {
      const l = runs.get(k);
      if (!l) return -1;
      let lo = 0, hi = l.length;
      while (lo < hi) { const mid = (lo + hi) >> 1; if (l[mid] <= i) lo = mid + 1; else hi = mid; }
      return lo < l.length ? l[lo] : -1;
    };
  }

  // inline renders one line's (or list item's) inline markup into parent:
  // `code` (the longest opening run that has an equal closing run), **bold**,
  // __bold__, *italic*, _italic_ (not followed by a letter or digit),
  // [text](url) and bare http(s) URLs, leftmost first. It is the scan the
  // regular expression
  //   (`+)([\s\S]*?[^`])\1(?!`)|\*\*([\s\S]+?)\*\*|__([\s\S]+?)__|\*([^*\s][^*]*?)\*|
  //   _([^_\s][^_]*?)_(?![A-Za-z0-9])|\[([^\]]+)\]\(([^)\s]+)\)|(https?:\/\/[^\s<>()]+[^\s<>().,;:!?'"])
  // did, without its backtracking, which cost the rest of the line at each
  // unclosed delimiter.
  const tokens = {
    strong: /\*\*/g, under2: /__/g, star: /\*/g, under: /_/g,
    bracket: /\]/g, hrefEnd: /[)\s]/g, urlEnd: /[\s<>()]/g,
  };
  function inline(parent, s) {
    const find = { code: null, urlAt: -1, urlLast: -1 };
    for (const k in tokens) find[k] = finder(s, tokens[k]);
    span(parent, s, 0, s.length, find, 0);
  }

  function span(parent, s, from, to, find, depth) {
    if (depth >= maxDepth) { if (to > from) text(parent, s.slice(from, to)); return; }
    let plain = from; // start of the text not yet emitted
    const emit = (at, node, inner, a, b) => {
      if (at > plain) text(parent, s.slice(plain, at));
      if (inner) span(node, s, a, b, find, depth + 1);
      parent.appendChild(node);
    };
    let p = from;
    while (p < to) {
      const c = s[p];
      if (c === "`") {
        let r = 1;
        while (p + r < to && s[p + r] === "`") r++;
        if (!find.code) find.code = closer(s);
        let k = r, j = -1;
        for (; k > 0; k--) {
          j = find.code(k, p + r);
          if (j >= 0 && j + k <= to) break;
        }
        if (k === 0) { p += r; continue; }
        const code = el("code");
        const body = s.slice(p + k, j);
        code.textContent = body.trim() || body;
        emit(p, code);
        p = plain = j + k;
      } else if ((c === "*" || c === "_") && p + 1 < to && s[p + 1] === c) {
        const j = (c === "*" ? find.strong : find.under2)(p + 3);
        if (j < 0 || j + 2 > to) { p++; continue; }
        emit(p, el("strong"), true, p + 2, j);
        p = plain = j + 2;
      } else if (c === "*" || c === "_") {
        if (p + 1 >= to || isSpace(s[p + 1])) { p++; continue; }
        const j = (c === "*" ? find.star : find.under)(p + 2);
        if (j < 0 || j >= to || (c === "_" && j + 1 < to && isWord(s[j + 1]))) { p++; continue; }
        emit(p, el("em"), true, p + 1, j);
        p = plain = j + 1;
      } else if (c === "[") {
        const k = find.bracket(p + 1);
        if (k < p + 2 || k + 1 >= to || s[k + 1] !== "(") { p++; continue; }
        const u = find.hrefEnd(k + 2);
        if (u < k + 3 || u >= to || s[u] !== ")") { p++; continue; }
        const href = safeHref(s.slice(k + 2, u));
        if (href) {
          const a = el("a"); a.href = href; a.rel = "noopener noreferrer nofollow"; a.target = "_blank";
          emit(p, a, true, p + 1, k);
        } else {
          emit(p, document.createTextNode(s.slice(p, u + 1)));
        }
        p = plain = u + 1;
      } else if (c === "h" && (s.startsWith("http://", p) || s.startsWith("https://", p))) {
        const rest = p + (s[p + 4] === "s" ? 8 : 7);
        let e = rest < to ? find.urlEnd(rest) : to;
        if (e < 0 || e > to) e = to;
        // The URL ends at its last character that is not punctuation; the
        // search down from e is done once for each e.
        let q = e - 1;
        if (find.urlAt === e) q = Math.max(find.urlLast, rest);
        else {
          while (q > rest && ".,;:!?'\"".includes(s[q])) q--;
          find.urlAt = e; find.urlLast = q;
        }
        if (q <= rest) { p++; continue; }
        const a = el("a"); a.href = s.slice(p, q + 1); a.rel = "noopener noreferrer nofollow"; a.target = "_blank";
        a.textContent = s.slice(p, q + 1);
        emit(p, a);
        p = plain = q + 1;
      } else {
        p++;
      }
    }
    if (to > plain) text(parent, s.slice(plain, to));
  }

  function paragraph(parent, lines, markup) {
    const p = el("p");
    lines.forEach((l, i) => {
      if (i > 0) p.appendChild(el("br"));
      if (markup) inline(p, l); else if (l) text(p, l);
    });
    parent.appendChild(p);
  }

  // The line tests, each linear in the line. A heading's or list item's
  // text ends the line: one holding another line terminator (U+2028,
  // U+2029) is neither.
  function fence(line) {
    return /^(```+|~~~+)\s*([\w+-]*)$/.exec(line.trim());
  }
  function heading(line) {
    const m = /^(#{1,6})\s+/.exec(line);
    if (!m) return null;
    let t = line.slice(m[0].length);
    if (lineEnd.test(t)) return null;
    // A closing run of #s, after a space, is not part of the text.
    let j = t.length;
    while (j > 0 && isSpace(t[j - 1])) j--;
    let k = j;
    while (k > 0 && t[k - 1] === "#") k--;
    let l = k;
    while (l > 0 && isSpace(t[l - 1])) l--;
    if (k < j && l < k) t = t.slice(0, l);
    return { level: m[1].length, text: t };
  }
  function rule(line) {
    const t = line.trim();
    const c = t[0];
    if (c !== "-" && c !== "*" && c !== "_") return false;
    let n = 0;
    for (const d of t) {
      if (d === c) n++;
      else if (!isSpace(d)) return false;
    }
    return n >= 3;
  }
  function listItem(line) {
    const m = /^\s*([-*+]|\d{1,9}[.)])\s+/.exec(line);
    if (!m) return null;
    const t = line.slice(m[0].length);
    return lineEnd.test(t) ? null : { marker: m[1], text: t };
  }
  const quoted = /^\s*>/;

  // blocks renders lines into parent. At depth 0, blank(i, last) is told of
  // each blank line i that ends the blocks before it, with the last node
  // parent then holds.
  function blocks(parent, lines, depth, blank) {
    let i = 0;
    let para = [];
    const flush = () => { if (para.length) { paragraph(parent, para, true); para = []; } };
    while (i < lines.length) {
      const line = lines[i];
      const f = fence(line);
      if (f) {
        flush();
        const body = [];
        i++;
        while (i < lines.length && !lines[i].trim().startsWith(f[1])) body.push(lines[i++]);
        i++; // closing fence (or the end of an unfinished stream)
        const pre = el("pre"); const code = el("code");
        if (f[2]) code.dataset.lang = f[2];
        code.textContent = body.join("\n");
        pre.appendChild(code); parent.appendChild(pre);
        continue;
      }
      const h = heading(line);
      if (h) {
        flush();
        const e = el("h" + Math.min(6, h.level + 2)); // inside a message, below the page's headings
        inline(e, h.text); parent.appendChild(e); i++;
        continue;
      }
      if (rule(line)) { flush(); parent.appendChild(el("hr")); i++; continue; }
      if (quoted.test(line)) {
        flush();
        const q = [];
        while (i < lines.length && quoted.test(lines[i])) q.push(lines[i++].replace(/^\s*>\s?/, ""));
        const bq = el("blockquote");
        if (depth + 1 < maxDepth) blocks(bq, q, depth + 1);
        else paragraph(bq, q, false);
        parent.appendChild(bq);
        continue;
      }
      const li = listItem(line);
      if (li) {
        flush();
        const ordered = /\d/.test(li.marker);
        const list = el(ordered ? "ol" : "ul");
        if (ordered && parseInt(li.marker, 10) !== 1) list.start = parseInt(li.marker, 10);
        while (i < lines.length) {
          const m = listItem(lines[i]);
          if (!m || /\d/.test(m.marker) !== ordered) break;
          const item = el("li");
          const body = [m.text];
          i++;
          while (i < lines.length && /^\s{2,}\S/.test(lines[i]) && !listItem(lines[i])) body.push(lines[i++].trim());
          inline(item, body.join(" "));
          list.appendChild(item);
        }
        parent.appendChild(list);
        continue;
      }
      if (line.trim() === "") {
        flush();
        if (blank) blank(i, parent.lastChild);
        i++;
        continue;
      }
      para.push(line);
      i++;
    }
    flush();
  }

  // split returns src's lines (each ended by \n, \r\n or \r) and where each
  // starts in src.
  function split(src) {
    const lines = [], starts = [];
    const re = /\r\n?|\n/g;
    let at = 0;
    for (let m; (m = re.exec(src));) {
      lines.push(src.slice(at, m.index)); starts.push(at);
      at = re.lastIndex;
    }
    lines.push(src.slice(at)); starts.push(at);
    return { lines, starts };
  }

  // work counts the characters render and update have parsed: what a
  // streamed answer costs, counted rather than timed (its test).
  const work = { chars: 0 };

  // render returns a DocumentFragment for the Markdown source.
  function render(src) {
    src = String(src);
    work.chars += src.length;
    const frag = document.createDocumentFragment();
    blocks(frag, split(src).lines, 0);
    return frag;
  }

  // What update last rendered into each container: the source up to the
  // start of the line after its last top-level blank line (blocks never
  // reach across one), and the last node that part made.
  const kept = new WeakMap();

  // update renders src into parent, replacing what is there, as render
  // would. When src begins with the part of the previous src that ended at a
  // blank line, that part's nodes are kept and only the rest is rendered:
  // re-rendering a streamed answer at each chunk costs its last blocks, not
  // the whole answer.
  function update(parent, src) {
    src = String(src);
    const prev = kept.get(parent);
    let from = 0, last = null;
    if (prev && src.startsWith(prev.stable) && (!prev.last || prev.last.parentNode === parent)) {
      from = prev.stable.length;
      last = prev.last;
    }
    while (parent.lastChild && parent.lastChild !== last) parent.lastChild.remove();
    work.chars += src.length - from;
    const frag = document.createDocumentFragment();
    const { lines, starts } = split(src.slice(from));
    let stable = from;
    blocks(frag, lines, 0, (i, node) => {
      if (i + 1 < lines.length) { stable = from + starts[i + 1]; if (node) last = node; }
    });
    parent.appendChild(frag);
    kept.set(parent, { stable: src.slice(0, stable), last });
  }

  window.AgentikMarkdown = { render, update, work };
})();
