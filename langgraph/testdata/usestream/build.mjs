// Bundles app.jsx for the browser (dist/app.js).
import { build } from "esbuild";

await build({
  entryPoints: ["app.jsx"],
  bundle: true,
  outfile: "dist/app.js",
  format: "iife",
  jsx: "automatic",
  define: { "process.env.NODE_ENV": '"production"' },
  logLevel: "error",
});
