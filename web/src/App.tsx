import { useCallback, useEffect, useState } from 'react';
import { api, getToken, ok, setToken, UNAUTHORIZED_EVENT, type Who } from './api/client.ts';
import { AuthContext } from './auth.tsx';
import { SignIn } from './components/SignIn.tsx';
import { StatusPanel } from './components/StatusPanel.tsx';
import { useRoute } from './lib/router.ts';
import { ExperimentsPage } from './pages/Experiments.tsx';
import { ExperimentView } from './pages/ExperimentView.tsx';
import { Home } from './pages/Home.tsx';
import { ReproductionsPage } from './pages/Reproductions.tsx';
import { RunView } from './pages/RunView.tsx';
import { ScenarioEditor } from './pages/ScenarioEditor.tsx';
import { ScenariosPage } from './pages/Scenarios.tsx';
import { TokensPage } from './pages/Tokens.tsx';

async function whoami(token: string): Promise<Who> {
  return ok(api.GET('/api/whoami', { headers: { Authorization: `Bearer ${token}` } }));
}

function Page() {
  const { parts, query } = useRoute();
  const [a, b] = parts;
  if (a === 'scenarios' && b) return <ScenarioEditor key={`${b}?${query.get('template') ?? ''}`} idOrNew={b} />;
  if (a === 'scenarios') return <ScenariosPage />;
  if (a === 'experiments' && b) return <ExperimentView key={b} id={Number(b)} />;
  if (a === 'experiments') return <ExperimentsPage />;
  if (a === 'runs' && b) return <RunView key={b} id={Number(b)} />;
  if (a === 'tokens') return <TokensPage />;
  if (a === 'reproductions') return <ReproductionsPage />;
  return <Home />;
}

const NAV = [
  ['', 'Start'],
  ['scenarios', 'Scenarios'],
  ['experiments', 'Experiments'],
  ['reproductions', 'Reproductions'],
] as const;

export function App() {
  const [token, setTok] = useState<string | null>(() => getToken());
  const [who, setWho] = useState<Who | null>(null);
  const [notice, setNotice] = useState<string>();
  const { parts } = useRoute();

  const signOut = useCallback((why?: string) => {
    setToken(null);
    setTok(null);
    setWho(null);
    setNotice(why);
  }, []);

  useEffect(() => {
    if (!token || who) return;
    whoami(token).then(setWho, () => {
      signOut('Your session ended: sign in again.');
    });
  }, [token, who, signOut]);

  useEffect(() => {
    const h = () => {
      signOut('The service did not accept the token any more: sign in again.');
    };
    globalThis.addEventListener(UNAUTHORIZED_EVENT, h);
    return () => {
      globalThis.removeEventListener(UNAUTHORIZED_EVENT, h);
    };
  }, [signOut]);

  const here = parts[0] ?? '';
  return (
    <>
      <a className="skip-link" href="#main" onClick={(e) => { e.preventDefault(); document.getElementById('main')?.focus(); }}>
        Skip to content
      </a>
      <header className="app-header">
        <div className="app-header__inner">
          <p className="app-header__brand">
            <span className="app-header__logo" aria-hidden="true" />
            <span>
              <span className="app-header__name">SatLab</span>
              <span className="app-header__tagline"> — GEO link emulator</span>
            </span>
          </p>
          {who && token ? (
            <>
              <nav aria-label="Main" className="app-nav">
                {[...NAV, ...(who.role === 'admin' ? ([['tokens', 'Tokens']] as const) : [])].map(([path, label]) => (
                  <a key={path} href={`#/${path}`} aria-current={here === path ? 'page' : undefined}>
                    {label}
                  </a>
                ))}
              </nav>
              <p className="app-user">
                <span title={`token #${who.id}`}>
                  {who.name} · <span className={`role role--${who.role}`}>{who.role}</span>
                </span>
                <button type="button" className="btn btn--small" onClick={() => { signOut(); }}>
                  Sign out
                </button>
              </p>
            </>
          ) : null}
        </div>
      </header>
      <main id="main" className="app-main" tabIndex={-1}>
        <h1 className="visually-hidden">SatLab — GEO link emulator</h1>
        {who && token ? (
          <AuthContext.Provider value={{ who, token, signOut: () => { signOut(); } }}>
            <Page />
          </AuthContext.Provider>
        ) : token ? (
          <p className="muted">Checking your token…</p>
        ) : (
          <>
            <p className="app-intro">
              Emulate a geostationary satellite link with real end hosts and real TCP, and compare transport schemes
              over the same channel conditions.
            </p>
            <SignIn
              check={whoami}
              notice={notice}
              onSignedIn={(t, w) => {
                setToken(t);
                setTok(t);
                setWho(w);
                setNotice(undefined);
              }}
            />
            <StatusPanel />
          </>
        )}
      </main>
      <footer className="app-footer">
        <p>SatLab · hardware-in-the-loop GEO satellite channel emulator · <a href="/docs">API docs</a></p>
      </footer>
    </>
  );
}
