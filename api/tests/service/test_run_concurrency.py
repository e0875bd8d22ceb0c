"""Two workers changing two runs of one experiment at once do not deadlock (make soak found
claim and finish deadlocking on the experiment row; the losing run stayed queued)."""

from __future__ import annotations

import threading

from fastapi.testclient import TestClient
from sqlalchemy import select, text

from satlab import db
from satlab.service import events, experiments, runs
from satlab.service.models import Run

from .conftest import Tokens, make_experiment


def test_two_run_changes_of_one_experiment_do_not_block_each_other(
    client: TestClient, tokens: Tokens
) -> None:
    exp = make_experiment(client, tokens, "conc", reps=1)["experiment"]
    with db.new_session() as s:
        run_ids = list(s.scalars(select(Run.id).where(Run.experiment_id == exp["id"])))
    a, b = db.new_session(), db.new_session()
    try:
        for s in (a, b):
            # A lock wait is a failure here, not a hang: the old FOR UPDATE waited on the other
            # transaction's foreign-key lock while that one waited on ours.
            s.execute(text("SET lock_timeout = '3s'"))
        # What claim and finish do first: record an event (its foreign key locks the experiment
        # row FOR KEY SHARE) in two transactions that stay open...
        for s, rid in ((a, run_ids[0]), (b, run_ids[1])):
            run = s.get(Run, rid)
            assert run is not None
            events.record(s, run, "running", 0.0, "claimed")
        # ...then each refreshes the experiment's state, a's first, b's while a's is still open.
        experiments.refresh_state(a, exp["id"])
        b_done = threading.Event()
        errors: list[BaseException] = []

        def refresh_b() -> None:
            try:
                experiments.refresh_state(b, exp["id"])
                b.commit()
            except BaseException as e:  # noqa: BLE001 - reported by the assertion below
                errors.append(e)
            b_done.set()

        t = threading.Thread(target=refresh_b)
        t.start()
        a.commit()  # a never waited on b's foreign-key lock; b waits only for a's refresh
        t.join(10)
        assert b_done.is_set() and not errors, errors
    finally:
        a.close()
        b.close()


def test_a_queued_run_whose_job_failed_gets_a_new_job(client: TestClient, tokens: Tokens) -> None:
    exp = make_experiment(client, tokens, "jobless", reps=1)["experiment"]
    with db.new_session() as s:
        run = s.scalars(select(Run).where(Run.experiment_id == exp["id"]).limit(1)).one()
        old_job = run.job_id
        # What a claim that failed in the database leaves: the job failed, the run still queued.
        s.execute(
            text("UPDATE procrastinate_jobs SET status = 'failed' WHERE id = :j"), {"j": old_job}
        )
        s.commit()
    with db.new_session() as s:
        acts = runs.janitor(s, runs.WorkerIdentity("here", 1), None)
    assert [a["run_id"] for a in acts] == [run.id]
    with db.new_session() as s:
        again = s.get(Run, run.id)
        assert again is not None and again.state == "queued" and again.job_id != old_job
        status = s.scalar(
            text("SELECT status::text FROM procrastinate_jobs WHERE id = :j"), {"j": again.job_id}
        )
        assert status == "todo"
