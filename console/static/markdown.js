// A small, safe Markdown renderer: it builds DOM nodes with createElement
// and textContent only, never an HTML parser, so untrusted text cannot inject
// markup. Supported: paragraphs, headings, fenced and inline code, bold,
// italic, links (http, https and mailto only), lists, block quotes, rules.
"use strict";
(function () {
  function el(tag, cls) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    return e;
  }

  function safeHref(u) {
    try {
      const url = new URL(u, location.href);
      if (url.protocol === "http:" || url.protocol === "https:" || url.protocol === "mailto:") return url.href;
    } catch (_) { /* not a URL */ }
    return null;
  }

  // inline renders one line's worth of inline markup into parent.
  const inlineRe = /(`+)([\s\S]*?[^`])\1(?!`)|\*\*([\s\S]+?)\*\*|__([\s\S]+?)__|\*([^*\s][^*]*?)\*|_([^_\s][^_]*?)_(?![A-Za-z0-9])|\[([^\]]+)\]\(([^)\s]+)\)|(https?:\/\/[^\s<>()]+[^\s<>().,;:!?'"])/;
  function inline(parent, text) {
    while (text) {
      const m = inlineRe.exec(text);
      if (!m) { parent.appendChild(document.createTextNode(text)); return; }
      if (m.index > 0) parent.appendChild(document.createTextNode(text.slice(0, m.index)));
      if (m[1]) {
        const c = el("code"); c.textContent = m[2].trim() || m[2]; parent.appendChild(c);
      } else if (m[3] || m[4]) {
        const b = el("strong"); inline(b, m[3] || m[4]); parent.appendChild(b);
      } else if (m[5] || m[6]) {
        const i = el("em"); inline(i, m[5] || m[6]); parent.appendChild(i);
      } else if (m[7]) {
        const href = safeHref(m[8]);
        if (href) {
          const a = el("a"); a.href = href; a.rel = "noopener noreferrer nofollow"; a.target = "_blank";
          inline(a, m[7]); parent.appendChild(a);
        } else parent.appendChild(document.createTextNode(m[0]));
      } else if (m[9]) {
        const a = el("a"); a.href = m[9]; a.rel = "noopener noreferrer nofollow"; a.target = "_blank";
        a.textContent = m[9]; parent.appendChild(a);
      }
      text = text.slice(m.index + m[0].length);
    }
  }

  function paragraph(parent, lines) {
    const p = el("p");
    lines.forEach((l, i) => {
      if (i > 0) p.appendChild(el("br"));
      inline(p, l);
    });
    parent.appendChild(p);
  }

  const listRe = /^(\s*)([-*+]|\d{1,9}[.)])\s+(.*)$/;

  // render returns a DocumentFragment for the Markdown source.
  function render(src) {
    const frag = document.createDocumentFragment();
    const lines = String(src).replace(/\r\n?/g, "\n").split("\n");
    let i = 0;
    let para = [];
    const flush = () => { if (para.length) { paragraph(frag, para); para = []; } };
    while (i < lines.length) {
      const line = lines[i];
      const fence = /^\s*(```+|~~~+)\s*([\w+-]*)\s*$/.exec(line);
      if (fence) {
        flush();
        const body = [];
        i++;
        while (i < lines.length && !lines[i].trim().startsWith(fence[1])) body.push(lines[i++]);
        i++; // closing fence (or the end of an unfinished stream)
        const pre = el("pre"); const code = el("code");
        if (fence[2]) code.dataset.lang = fence[2];
        code.textContent = body.join("\n");
        pre.appendChild(code); frag.appendChild(pre);
        continue;
      }
      const h = /^(#{1,6})\s+(.*)$/.exec(line);
      if (h) {
        flush();
        const e = el("h" + Math.min(6, h[1].length + 2)); // inside a message, below the page's headings
        inline(e, h[2].replace(/\s+#+\s*$/, "")); frag.appendChild(e); i++;
        continue;
      }
      if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) { flush(); frag.appendChild(el("hr")); i++; continue; }
      if (/^\s*>/.test(line)) {
        flush();
        const q = [];
        while (i < lines.length && /^\s*>/.test(lines[i])) q.push(lines[i++].replace(/^\s*>\s?/, ""));
        const bq = el("blockquote"); bq.appendChild(render(q.join("\n"))); frag.appendChild(bq);
        continue;
      }
      const li = listRe.exec(line);
      if (li) {
        flush();
        const ordered = /\d/.test(li[2]);
        const list = el(ordered ? "ol" : "ul");
        if (ordered && parseInt(li[2], 10) !== 1) list.start = parseInt(li[2], 10);
        while (i < lines.length) {
          const m = listRe.exec(lines[i]);
          if (!m || /\d/.test(m[2]) !== ordered) break;
          const item = el("li");
          const body = [m[3]];
          i++;
          while (i < lines.length && /^\s{2,}\S/.test(lines[i]) && !listRe.test(lines[i])) body.push(lines[i++].trim());
          inline(item, body.join(" "));
          list.appendChild(item);
        }
        frag.appendChild(list);
        continue;
      }
      if (line.trim() === "") { flush(); i++; continue; }
      para.push(line);
      i++;
    }
    flush();
    return frag;
  }

  window.AgentikMarkdown = { render };
})();
