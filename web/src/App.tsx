import { StatusPanel } from './components/StatusPanel.tsx';

export function App() {
  return (
    <>
      <a className="skip-link" href="#main">
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
        </div>
      </header>
      <main id="main" className="app-main" tabIndex={-1}>
        <h1 className="visually-hidden">SatLab — GEO link emulator</h1>
        <p className="app-intro">
          Emulate a geostationary satellite link with real end hosts and real TCP, and compare
          transport schemes over the same channel conditions.
        </p>
        <StatusPanel />
      </main>
      <footer className="app-footer">
        <p>SatLab · hardware-in-the-loop GEO satellite channel emulator</p>
      </footer>
    </>
  );
}
