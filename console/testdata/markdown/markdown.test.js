// The console's Markdown renderer in a real browser, driven by
// console.TestMarkdownInChromium: ordinary Markdown renders as it always
// has, untrusted text stays text, and hostile input costs time linear in its
// size. Each check is a result {name, ok, detail}; all of them are posted
// to /test/result at the end (or the first exception, with its stack).
"use strict";
(function () {
  const md = window.AgentikMarkdown;
  const results = [];
  const check = (name, ok, detail) => results.push({ name, ok: !!ok, detail: String(detail) });
  const now = () => performance.now();
  const ms = (t) => t.toFixed(2) + " ms";

  function run() {
    // html renders src into a detached element and returns its markup.
    function html(src) {
      const d = document.createElement("div");
      d.appendChild(md.render(src));
      return d.innerHTML;
    }

    // ---- ordinary Markdown and untrusted text --------------------------------
    // Expected outputs are what the renderer produced before it was made linear.
    const golden = [
      ["plain", "Hello world", "<p>Hello world</p>"],
      ["inline", "Some **bold**, __bold__, *em*, _em_, `code`, ``a ` b`` and ***both***.",
        "<p>Some <strong>bold</strong>, <strong>bold</strong>, <em>em</em>, <em>em</em>, <code>code</code>, <code>a ` b</code> and <strong>*both</strong>*.</p>"],
      ["nested inline", "**bold with *em* and `code` and [a link](https://example.com/a)**",
        "<p><strong>bold with <em>em</em> and <code>code</code> and <a href=\"https://example.com/a\" rel=\"noopener noreferrer nofollow\" target=\"_blank\">a link</a></strong></p>"],
      ["snake_case stays", "call snake_case_name or _x_y but _x_", "<p>call snake_case_name or _x_y but <em>x</em></p>"],
      ["links", "see https://example.com/path?q=1. and [mail](mailto:a@example.com) or [rel](/x)",
        "<p>see <a href=\"https://example.com/path?q=1\" rel=\"noopener noreferrer nofollow\" target=\"_blank\">https://example.com/path?q=1</a>. and <a href=\"mailto:a@example.com\" rel=\"noopener noreferrer nofollow\" target=\"_blank\">mail</a> or <a href=\"" + location.origin + "/x\" rel=\"noopener noreferrer nofollow\" target=\"_blank\">rel</a></p>"],
      ["blocks", "# Title #\n\nline one\nline two\n\n- a\n- b\n  more\n\n3. three\n4. four\n\n> quoted\n> > deeper\n\n---\n\n```js\nlet a = 1 < 2;\n```\n~~~\nopen fence",
        "<h3>Title</h3><p>line one<br>line two</p><ul><li>a</li><li>b more</li></ul><ol start=\"3\"><li>three</li><li>four</li></ol><blockquote><p>quoted</p><blockquote><p>deeper</p></blockquote></blockquote><hr><pre><code data-lang=\"js\">let a = 1 &lt; 2;</code></pre><pre><code>open fence</code></pre>"],
      ["unclosed", "**open and *open and `open and [open](", "<p>*<em>open and </em>open and `open and [open](</p>"],
      ["script stays text", "<script>alert(1)</script> <img src=x onerror=alert(1)>",
        "<p>&lt;script&gt;alert(1)&lt;/script&gt; &lt;img src=x onerror=alert(1)&gt;</p>"],
      ["javascript: link stays text", "[click](javascript:alert(1)) [x](data:text/html,hi)",
        "<p>[click](javascript:alert(1)) [x](data:text/html,hi)</p>"],
      ["quotes in a URL stay in the URL", "[x](https://e.com/\"onmouseover=alert(1))",
        "<p><a href=\"https://e.com/%22onmouseover=alert(1\" rel=\"noopener noreferrer nofollow\" target=\"_blank\">x</a>)</p>"],
    ];
    for (const [name, src, want] of golden) {
      let got;
      try { got = html(src); } catch (e) { got = "threw " + e; }
      check("golden: " + name, got === want, got === want ? "as before" : "got  " + got + "\nwant " + want);
    }

    // ---- documents -------------------------------------------------------------
    const words = "the quick brown fox jumps over a lazy dog while seven wizards quietly pack boxes of liquor".split(" ");
    // prose is an ordinary document of about n characters: paragraphs of
    // words, the yardstick hostile input is measured against.
    function prose(n) {
      const out = [];
      let len = 0, w = 0, line = "", lines = 0;
      while (len < n) {
        const word = words[w++ % words.length];
        if (line.length + word.length > 72) {
          out.push(line); len += line.length + 1; line = "";
          if (++lines % 4 === 0) { out.push(""); len++; }
        }
        line += (line ? " " : "") + word;
      }
      out.push(line);
      return out.join("\n").slice(0, n);
    }
    // mixed is a document of about n characters with every construct, and
    // among them hostile ones that grow with it (each about n/50 long).
    const ordinary = [
      "# A heading with **bold** and `code` #",
      "A paragraph with **bold**, *italic*, __strong__, _em_, `inline code`, a [link](https://example.com/x) and\nhttps://example.org/bare.url, on two lines.",
      "- an item with **bold**\n- another\n  continued\n1. one\n2. two",
      "```js\nconst a = 1 < 2 && b > 3; // **not bold**\n```",
      "> a quote with *em*\n> > and a nested one",
      "---",
    ];
    const hostile = (k) => [
      "[a](".repeat(k / 4) + " after",
      "**".repeat(k / 6) + " *a".repeat(k / 6) + " _b".repeat(k / 6),
      "`".repeat(k / 10) + " `` ` ``` ".repeat(k / 10),
      "> ".repeat(k / 2) + "deep",
      "http://" + ".".repeat(k / 2) + " https://" + ",".repeat(k / 2),
      "# " + " ".repeat(k / 2) + "#".repeat(k / 2) + " x",
    ];
    function mixed(n) {
      const pieces = [];
      hostile(Math.max(120, Math.round(n / 300) * 6)).forEach((h, i) => pieces.push(ordinary[i], h));
      const out = [];
      let len = 0;
      for (let i = 0; len < n; i++) {
        const p = pieces[i % pieces.length];
        out.push(p); len += p.length + 2;
      }
      return out.join("\n\n");
    }
    // answer is an ordinary answer of about n characters: prose between the
    // ordinary constructs.
    function answer(n) {
      const out = [];
      let len = 0;
      for (let i = 0; len < n; i++) {
        const p = i % 2 ? ordinary[(i >> 1) % ordinary.length] : prose(400 + 37 * (i % 11));
        out.push(p); len += p.length + 2;
      }
      return out.join("\n\n");
    }
    const quotes = (n) => ">".repeat(n) + " text";
    const openers = (n) => "[a](".repeat(Math.ceil(n / 4));

    // ---- timing ----------------------------------------------------------------
    function timeOf(f, reps) {
      const t0 = now();
      for (let i = 0; i < reps; i++) f();
      return (now() - t0) / reps;
    }
    // bench returns the best time of rendering each of srcs, over rounds that
    // interleave them (so a busy moment slows all alike) until good(best)
    // holds, for at most seven rounds or twenty seconds. Each render is
    // repeated enough for a round to take about 25 ms.
    function bench(srcs, good) {
      const start = now();
      const best = srcs.map((s) => timeOf(() => md.render(s), 1));
      const reps = best.map((t) => Math.max(1, Math.min(500, Math.ceil(25 / Math.max(t, 0.05)))));
      for (let round = 0; round < 7 && now() - start < 20000 && !good(best); round++) {
        srcs.forEach((s, i) => { best[i] = Math.min(best[i], timeOf(() => md.render(s), reps[i])); });
      }
      return best;
    }

    // linear checks one kind of hostile input: it renders without an
    // exception (and as sane() says), at most 10 times as slowly as ordinary
    // prose of the same size, and twice as much of it takes at most about three
    // times as long.
    function linear(name, make, n, sane) {
      const h1 = make(n);
      let first;
      try {
        const t0 = now();
        const f = md.render(h1);
        first = now() - t0;
        const d = document.createElement("div");
        d.appendChild(f);
        const why = sane(d, h1);
        if (why) return check(name, false, why);
      } catch (e) {
        return check(name, false, "rendering " + h1.length + " characters threw " + e);
      }
      const p1 = prose(h1.length);
      const near = (b) => b[0] <= 10 * b[1];
      let [th1, tp1] = bench([h1, p1], near);
      const at1 = h1.length + " characters: " + ms(th1) + " (first render " + ms(first) + "), prose of the same size " + ms(tp1);
      if (!near([th1, tp1])) return check(name, false, at1 + ": more than 10 times the prose's time");
      const h2 = make(2 * n), p2 = prose(h2.length);
      try { md.render(h2); } catch (e) { return check(name, false, "rendering " + h2.length + " characters threw " + e); }
      const good = (b) => b[2] <= 10 * b[3] && b[2] <= 3 * b[0] + b[1];
      const b = bench([h1, p1, h2, p2], good);
      const at2 = at1 + "; " + h2.length + " characters: " + ms(b[2]) + ", prose " + ms(b[3]) + " (now " + ms(b[0]) + " and " + ms(b[1]) + " at the half)";
      check(name, good(b), at2 + (good(b) ? "" : ": not linear (twice the input must cost at most 3 times the time, plus prose of the half, and 10 times the prose)"));
    }

    linear("nested quotes", quotes, 10000, (d) => {
      const n = d.querySelectorAll("blockquote").length;
      if (n < 8 || n > 32) return n + " nested block quotes: the depth is not bounded at a sane limit";
      if (!d.textContent.endsWith("text")) return "the text after the quotes is lost: " + d.textContent.slice(-40);
      return "";
    });
    linear("link openers", openers, 240000, (d, src) => {
      if (d.querySelector("a")) return "a link made of openers";
      if (d.textContent !== src) return "the text is not shown as it is";
      return "";
    });
    linear("mixed document", mixed, 240000, (d) => {
      if (!d.querySelector("h3 strong") || !d.querySelector("ul li") || !d.querySelector("blockquote blockquote") || !d.querySelector("pre code[data-lang=js]"))
        return "constructs missing: " + d.innerHTML.slice(0, 300);
      if ([...d.querySelectorAll("a")].some((a) => !/^(https?|mailto):/.test(a.href))) return "a link that is not http(s) or mailto";
      return "";
    });

    // ---- streaming ---------------------------------------------------------------
    // update through every prefix of a stream shows what render shows.
    (function () {
      const doc = mixed(30000);
      const box = document.createElement("div");
      const ref = document.createElement("div");
      try {
        for (let at = 0, step = 1; at < doc.length; step = step % 97 + 13) {
          at = Math.min(doc.length, at + step);
          md.update(box, doc.slice(0, at));
          ref.replaceChildren(md.render(doc.slice(0, at)));
          if (box.innerHTML !== ref.innerHTML) {
            return check("streaming renders what render does", false, "after " + at + " characters:\ngot  " + box.innerHTML.slice(-300) + "\nwant " + ref.innerHTML.slice(-300));
          }
        }
        md.update(box, "a **new** answer");
        check("streaming renders what render does", box.innerHTML === "<p>a <strong>new</strong> answer</p>", "every prefix as render; a new text replaces the old: " + box.innerHTML);
      } catch (e) {
        check("streaming renders what render does", false, "threw " + e);
      }
    })();

    // Re-rendering a 240 KB answer at each of its 1,000 chunks parses at
    // most 25 times the answer, where rendering it whole each time parses
    // it 1,000 times. Counted in characters parsed (md.work), not timed.
    // (An answer of one huge block is still rendered whole at each chunk:
    // the console spaces its renders by what they cost.)
    (function () {
      const doc = answer(240000);
      const chunks = 1000, size = Math.ceil(doc.length / chunks);
      try {
        const box = document.createElement("div");
        const before = md.work.chars;
        for (let at = size; at - size < doc.length; at += size) md.update(box, doc.slice(0, at));
        const parsed = md.work.chars - before;
        check("streaming costs the tail", parsed <= 25 * doc.length,
          doc.length + " characters in " + chunks + " chunks parsed " + parsed + " characters (limit 25 times the answer)");
      } catch (e) {
        check("streaming costs the tail", false, "threw " + e);
      }
    })();
  }

  let fatal = "";
  try { run(); } catch (e) { fatal = String(e && e.stack || e); }
  fetch("/test/result", { method: "POST", body: JSON.stringify({ results, fatal }) });
})();
