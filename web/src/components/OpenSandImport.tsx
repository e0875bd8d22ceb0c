// Import an OpenSAND 8 configuration (a zip or tar of its directory) as a new scenario: the
// service reads it (POST /api/opensand/import?create=true), uploads the traces and tables the link
// names and creates the scenario; every OpenSAND setting it could not map is listed here by file
// and element, with the reason.
import { useState } from 'react';

import { api, ok, type Schemas } from '../api/client.ts';
import { ErrorBox } from './bits.tsx';
import { Table } from './Table.tsx';

type ImportOut = Schemas['OpenSandImportOut'];

export function OpenSandImport({ onCreated }: { onCreated?: () => void }) {
  const [file, setFile] = useState<File | undefined>();
  const [name, setName] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | undefined>();
  const [result, setResult] = useState<ImportOut | undefined>();

  async function submit() {
    if (!file) return;
    setBusy(true);
    setError(undefined);
    setResult(undefined);
    try {
      const bytes = await file.arrayBuffer();
      const out = await ok(
        api.POST('/api/opensand/import', {
          params: { query: { create: true, ...(name ? { name } : {}) } },
          body: bytes as unknown as string,
          bodySerializer: (b: unknown) => b as BodyInit,
          headers: { 'Content-Type': 'application/octet-stream' },
        }),
      );
      setResult(out);
      onCreated?.();
    } catch (e) {
      setError(e instanceof Error ? e.message : String(e));
    } finally {
      setBusy(false);
    }
  }

  return (
    <section className="card" aria-labelledby="opensand-title">
      <h3 id="opensand-title">Import an OpenSAND 8 configuration</h3>
      <p className="field-help">
        A zip or tar of the directory (an opensand-deploy project or one folder per entity: infrastructure, topology and profile
        XML, and the trace files they name), 4 MiB at most. Settings that have no place in the link are listed below.
      </p>
      <div className="row">
        <label>
          Archive{' '}
          <input
            type="file"
            accept=".zip,.tar,.tgz,.tar.gz,.tar.xz"
            onChange={(e) => {
              setFile(e.target.files?.[0]);
            }}
          />
        </label>
        <label>
          Scenario name{' '}
          <input
            value={name}
            placeholder="(the directory's name)"
            onChange={(e) => {
              setName(e.target.value);
            }}
          />
        </label>
        <button type="button" className="btn" disabled={!file || busy} onClick={() => void submit()}>
          {busy ? 'Importing…' : 'Import'}
        </button>
      </div>
      <ErrorBox error={error} title="Import refused" />
      {result?.scenario ? (
        <div>
          <p>
            Created <a href={`#/scenarios/${result.scenario.id}`}>{result.scenario.name}</a>
            {result.uploads?.length ? ` with ${result.uploads.length} uploaded file(s)` : ''}.
          </p>
          <details open={result.not_mapped.length <= 20}>
            <summary>{result.not_mapped.length} OpenSAND settings not mapped</summary>
            <Table caption="OpenSAND settings not mapped" hideCaption columns={['File', 'Setting', 'Value', 'Why']}>
              {result.not_mapped.map((n) => (
                <tr key={`${n.file} ${n.setting}`}>
                  <td>{n.file}</td>
                  <td>
                    <code>{n.setting}</code>
                  </td>
                  <td className="clip">{n.value}</td>
                  <td>{n.reason}</td>
                </tr>
              ))}
            </Table>
          </details>
        </div>
      ) : null}
    </section>
  );
}
