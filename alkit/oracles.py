"""Oracles: who answers a cycle's selections.  The loop has one flow; the oracle decides what a
committed cycle writes and whether the run goes on in this call (small-text's query/update split).

- ``SimulatedOracle`` (projects created with ``--hide-labels``, benchmarks): the pool's hidden
  labels answer at once, in the cycle's own transaction, so a run goes on until its budget is spent.
- ``HumanOracle`` (every other project): the selected items become *queued* in the cycle's
  transaction and are exported for people; the run stops until their labels are imported
  (``alkit queue import``), then the next ``alkit run`` does the next cycle.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from alkit.config import Project
from alkit.pools import queue
from alkit.pools.labelfiles import format_for_suffix
from alkit.pools.store import Store


class OracleError(RuntimeError):
    """The oracle cannot answer (a simulated label is missing)."""


@dataclass
class Handoff:
    """What a human oracle handed to people after a cycle: how many items, in which file."""

    n_items: int
    path: Path
    set_aside: Path | None = None  # the file ``path`` held, with answers not yet imported, moved here
    set_aside_unreadable: bool = False  # what was moved is no label file alkit can read (not answers)
    why: str = ""  # why a waiting run wrote the queue file again (hand_off_again)


class Oracle(Protocol):
    one_cycle_per_call: bool  # True: people label between calls

    def waiting(self, run_id: int) -> int:
        """Items of this run still waiting for an answer (0: a cycle may run)."""

    def pool_held(self, run_name: str) -> int:
        """Pool items the run's own earlier picks hold outside the unlabeled pool (budget check)."""

    def commit(self, run_id: int, cycle: int, selections: list[dict[str, Any]], cycle_row: dict[str, Any],
               final: bool) -> None:
        """Record the cycle with this oracle's answers (or queue), in one transaction."""

    def hand_off(self, n_selected: int, queue_file: str | None) -> Handoff | None:
        """After a committed cycle: give the selections to whoever answers them."""

    def hand_off_again(self, n_waiting: int, queue_file: str | None) -> Handoff | None:
        """While answers are awaited: the queue file written again where it is gone (None: nothing to do)."""


class SimulatedOracle:
    """Answers from the hidden labels of the pool, at once."""

    one_cycle_per_call = False

    def __init__(self, store: Store) -> None:
        self.store = store

    def waiting(self, run_id: int) -> int:
        return 0

    def pool_held(self, run_name: str) -> int:
        return 0  # answered picks are labeled: they count as spent, not as pool

    def commit(self, run_id: int, cycle: int, selections: list[dict[str, Any]], cycle_row: dict[str, Any],
               final: bool) -> None:
        answers = self.store.hidden_labels([r["item_key"] for r in selections])
        labels = []
        for row in selections:
            value = answers.get(row["item_key"])
            if value is None:
                raise OracleError(f"the simulated oracle has no label for item key {row['item_key']}")
            labels.append({"item_key": row["item_key"], "value": value, "annotator": "oracle"})
        self.store.commit_cycle(run_id, cycle, selections=selections, oracle_labels=labels, cycle_row=cycle_row,
                                run_status="complete" if final else None)

    def hand_off(self, n_selected: int, queue_file: str | None) -> Handoff | None:
        return None

    def hand_off_again(self, n_waiting: int, queue_file: str | None) -> Handoff | None:
        return None


class HumanOracle:
    """People answer: selections are queued, exported, and imported back between runs."""

    one_cycle_per_call = True

    def __init__(self, project: Project, store: Store) -> None:
        project.require(project.payload_path, why="the labelers' queue file is written from it", readable=True)
        self.project, self.store = project, store

    def waiting(self, run_id: int) -> int:
        return queue.n_waiting(self.store, run_id)

    def pool_held(self, run_name: str) -> int:
        return queue.n_selected_by_name(self.store, run_name)

    def commit(self, run_id: int, cycle: int, selections: list[dict[str, Any]], cycle_row: dict[str, Any],
               final: bool) -> None:
        self.store.commit_cycle(run_id, cycle, selections=selections, oracle_labels=[], cycle_row=cycle_row,
                                run_status="waiting" if selections else "complete", queue_selected=True)

    def hand_off(self, n_selected: int, queue_file: str | None) -> Handoff | None:
        if not n_selected:
            return None
        # the format its name gives, else CSV: the batch is already committed, so any name is written
        named = queue_file is not None and format_for_suffix(Path(queue_file)) is not None
        try:
            out = queue.export_queue(self.project, queue_file, None if named else "csv", store=self.store)
        except (OSError, queue.QueueError) as exc:  # a refusal read as 'nothing changed' while the batch was
            recorded = (f"the batch of {n_selected} is recorded and queued, and the same command writes its queue "
                        "file once that is mended")  # committed (a folder or a bad link at queue.csv; checks)
            if isinstance(exc, queue.QueueError):
                raise queue.QueueError(f"{exc}; {recorded}") from exc
            if exc.errno is None or exc.filename is None:
                raise
            raise type(exc)(exc.errno, f"{exc.strerror}; {recorded}", exc.filename) from exc
        return Handoff(n_selected, out.path, out.set_aside, out.set_aside_unreadable)

    def hand_off_again(self, n_waiting: int, queue_file: str | None) -> Handoff | None:
        """A waiting run found its default queue file deleted, or listing another batch (a run killed
        between recording its batch and writing the file left the previous one): it would say
        "import FILE" of a file that is not there or holds other items (black-box checks), so the
        queue is written again, as the cycle wrote it (answers the old file held, not yet imported,
        kept beside it by ``export_queue``)."""
        path = queue.default_queue_path(self.project)
        if queue_file is not None:
            return None
        why = "was missing" if not path.exists() else "" if queue.lists_every_queued(self.store, path) else \
            "listed other items than the queued ones"
        if not why:
            return None
        out = self.hand_off(n_waiting, None)
        if out is not None and out.set_aside_unreadable:
            why = "was no label file alkit can read"
        return None if out is None else replace(out, why=why)


def oracle_for(project: Project, store: Store) -> Oracle:
    """The project's oracle: simulated where the pool's labels are hidden, people otherwise."""
    return SimulatedOracle(store) if project.config.hide_labels else HumanOracle(project, store)
