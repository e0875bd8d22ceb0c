import { api, canSubmit, ok } from '../api/client.ts';
import { useAuth } from '../auth.tsx';
import { ErrorBox, PageHead } from '../components/bits.tsx';
import { OpenSandImport } from '../components/OpenSandImport.tsx';
import { num, Table } from '../components/Table.tsx';
import { fmtDuration, fmtWhen } from '../lib/format.ts';
import { useAsync } from '../lib/useAsync.ts';

export function ScenariosPage() {
  const { who } = useAuth();
  const list = useAsync(() => ok(api.GET('/api/scenarios', { params: { query: { limit: 200 } } })), []);
  return (
    <div className="stack">
      <PageHead title="Scenario library">
        {canSubmit(who) ? (
          <>
            <a className="btn btn--primary" href="#/scenarios/new?template=quickstart">New from the quickstart template</a>
            <a className="btn" href="#/scenarios/new?template=blank">New blank scenario</a>
          </>
        ) : null}
      </PageHead>
      <ErrorBox error={list.error} title="Cannot list scenarios" />
      {canSubmit(who) ? <OpenSandImport onCreated={list.reload} /> : null}
      {list.data?.items.length === 0 ? <p className="muted">No scenario yet.</p> : null}
      {list.data?.items.length ? (
        <Table
          caption="Scenarios"
          hideCaption
          columns={['Name', 'Description', 'Configurations', num('Run length'), num('Revisions'), 'Created']}
        >
          {list.data.items.map((s) => {
            const spec = (s.latest?.spec ?? {}) as { description?: string; duration_s?: number; configurations?: { name: string }[] };
            return (
              <tr key={s.id}>
                <th scope="row"><a href={`#/scenarios/${s.id}`}>{s.name}</a></th>
                <td className="clip">{spec.description}</td>
                <td>{spec.configurations?.map((c) => c.name).join(', ')}</td>
                <td className="num">{fmtDuration(spec.duration_s)}</td>
                <td className="num">{s.revisions}</td>
                <td>{fmtWhen(s.created_at)}</td>
              </tr>
            );
          })}
        </Table>
      ) : null}
    </div>
  );
}
