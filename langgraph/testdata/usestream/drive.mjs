// Drives the useStream page (app.jsx) in headless Chromium, run by langgraph
// TestUseStreamBrowser: node drive.mjs <page url>. Prints one JSON object of
// what the page showed at each step; a failing step throws (stderr says
// which, and what the page showed).
import { chromium } from "playwright-core";

const [url] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
const errors = [];
const out = {};
let page;

async function shown() {
  return page.$$eval("#messages li", (lis) => lis.map((li) => ({
    type: li.dataset.type,
    text: li.querySelector(".text").textContent,
    branch: li.querySelector(".branch-index")?.textContent ?? "",
  })));
}

// idleWith waits until the page is idle and its last message is text.
async function idleWith(last) {
  await page.waitForFunction((want) => {
    const lis = [...document.querySelectorAll("#messages li .text")];
    return document.querySelector("#status").textContent === "idle" && lis.length > 0 && lis[lis.length - 1].textContent === want;
  }, last, { timeout: 30000 });
  return shown();
}

async function step(name, fn) {
  try {
    out[name] = await fn();
  } catch (e) {
    const seen = page ? await shown().catch(() => "?") : "?";
    const err = page ? await page.$eval("#error", (d) => d.textContent).catch(() => "") : "";
    throw new Error(`step ${name}: ${e.message}\npage shows ${JSON.stringify(seen)} ${err}\nbrowser errors ${JSON.stringify(errors)}`);
  }
}

try {
  page = await browser.newPage();
  page.setDefaultTimeout(30000);
  page.on("pageerror", (e) => errors.push(String(e)));
  await page.goto(url);

  await step("send", async () => {
    // The answer streams in: the page shows part of it before the whole.
    await page.fill("#text", "hello");
    await page.click("#send");
    await page.waitForFunction(() => {
      const t = [...document.querySelectorAll("#messages li.ai .text")].map((x) => x.textContent);
      return t.length === 1 && t[0].length > 0 && t[0] !== "the first answer streams in";
    }, null, { timeout: 30000 });
    const partial = await page.$eval("#messages li.ai .text", (x) => x.textContent);
    // The model holds the rest of its answer until the page showed a part.
    await fetch(new URL("/release", url), { method: "POST" });
    const all = await idleWith("the first answer streams in");
    return { partial, all };
  });
  out.url = page.url();

  await step("reload", async () => {
    await page.reload();
    return idleWith("the first answer streams in");
  });

  await step("regenerate", async () => {
    await page.click("#messages li.ai .regenerate");
    return idleWith("a second answer");
  });

  await step("previous", async () => {
    await page.click("#messages li.ai .prev");
    return idleWith("the first answer streams in");
  });

  await step("next", async () => {
    await page.click("#messages li.ai .next");
    return idleWith("a second answer");
  });

  await step("edit", async () => {
    await page.fill("#edit-text", "hello, edited");
    await page.click("#messages li.human .edit");
    return idleWith("the answer to the edit");
  });

  await step("approval", async () => {
    await page.fill("#text", "mail bob");
    await page.click("#send");
    await page.waitForSelector("#interrupt #approve");
    const action = await page.$eval("#interrupt .action", (x) => x.textContent);
    await page.click("#interrupt #approve");
    const all = await idleWith("mail sent");
    const still = await page.$("#interrupt");
    return { action, all, interruptGone: still === null };
  });
  out.errors = errors;
  process.stdout.write(JSON.stringify(out));
} finally {
  await browser.close();
}
