import { api, ok } from '../api/client.ts';
import { ErrorBox, PageHead, Progress, StateBadge } from '../components/bits.tsx';
import { num, Table } from '../components/Table.tsx';
import { fmtDuration, fmtWhen } from '../lib/format.ts';
import { useAsync } from '../lib/useAsync.ts';

export function ExperimentsPage() {
  const list = useAsync(() => ok(api.GET('/api/experiments', { params: { query: { limit: 100 } } })), [], 3000);
  const items = list.data?.items ?? [];
  return (
    <div className="stack">
      <PageHead title="Experiments and queue" />
      <ErrorBox error={list.error} title="Cannot list experiments" />
      {list.data && !items.length ? <p className="muted">No experiment yet. Submit one from a scenario.</p> : null}
      {items.length ? (
        <Table
          caption="Experiments, newest first (refreshes every 3 s)"
          hideCaption
          columns={['#', 'Scenario', 'State', 'Runs', 'Configurations', num('Estimate'), 'Submitted']}
        >
          {items.map((e) => {
            const total = Object.values(e.runs_by_state).reduce((a, b) => a + b, 0);
            const finished = total - (e.runs_by_state.queued ?? 0) - (e.runs_by_state.running ?? 0);
            return (
              <tr key={e.id}>
                <td><a href={`#/experiments/${e.id}`}>#{e.id}</a></td>
                <th scope="row"><a href={`#/experiments/${e.id}`}>{e.scenario_name}</a></th>
                <td><StateBadge state={e.state} /></td>
                <td>
                  {finished}/{total} <Progress value={total ? finished / total : 0} label={`experiment ${e.id} progress`} />
                  <span className="muted"> {Object.entries(e.runs_by_state).map(([s, n]) => `${n} ${s}`).join(', ')}</span>
                </td>
                <td>{(e.matrix.configurations as string[] | undefined)?.join(', ')}</td>
                <td className="num">{fmtDuration(e.estimate_s)}</td>
                <td>{fmtWhen(e.created_at)}</td>
              </tr>
            );
          })}
        </Table>
      ) : null}
    </div>
  );
}
