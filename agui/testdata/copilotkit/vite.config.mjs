// Built by the Go test into a temporary directory (AGENTIK_E2E_OUT).
import { defineConfig } from "vite";

export default defineConfig({
  logLevel: "error",
  build: { outDir: process.env.AGENTIK_E2E_OUT, emptyOutDir: true, chunkSizeWarningLimit: 100000 },
});
