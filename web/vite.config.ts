import react from '@vitejs/plugin-react';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// The FastAPI service serves /api and, in production, the built UI from web/dist on one origin.
// In development the Vite server proxies /api to it, so the UI always calls relative /api URLs.
const apiTarget = process.env.SATLAB_API_URL ?? 'http://127.0.0.1:8700';

export default defineConfig({
  plugins: [react()],
  server: {
    host: '127.0.0.1',
    port: 5173,
    strictPort: true,
    proxy: {
      '/api': { target: apiTarget, changeOrigin: false },
    },
    // The unit tests read the API's copy of the emulator's link schema (the form's input).
    fs: { allow: ['.', fileURLToPath(new URL('../api/satlab', import.meta.url))] },
  },
  build: {
    outDir: 'dist',
    sourcemap: true,
  },
  test: {
    environment: 'jsdom',
    setupFiles: ['./src/test/setup.ts'],
    include: ['src/**/*.test.{ts,tsx}'],
    restoreMocks: true,
    unstubGlobals: true,
  },
});
