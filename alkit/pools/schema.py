"""SQLAlchemy 2 schema of the store (DESIGN.md 'Store').

items      one row per pool/test row; ``key`` is the row's position in features.parquet.
labels     every label ever obtained; ``run_id`` NULL = a shared label (given at init or
           imported from labelers) that every run sees; otherwise the simulated oracle's answer
           for that run.  Never updated in place except by an explicit --on-conflict replace.
runs       one strategy x scorer x seed x batch size on this project.
selections which items a run picked in which cycle, with score and greedy utility (audit);
           UNIQUE(run_id, item_key) makes "no item selected twice within a run" a DB invariant.
cycles     one row per completed cycle: labels at fit time, metrics, timings.
cycle_signals what the stopping rules read per cycle (the model's predictions on a fixed stop set,
           the acquisition scores' maximum and mean), written with the cycle; created on first use.
run_leases which process is driving a run right now (alkit/pools/leases.py); created on first use,
           so stores made before it need no migration.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

SCHEMA_VERSION = 1


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


class UTCDateTime(TypeDecorator[datetime]):
    """TIMESTAMP WITH TIME ZONE that always reads back as an aware UTC datetime.

    PostgreSQL returns aware datetimes in the session's time zone; SQLite keeps no zone and
    returns naive ones.  Storing UTC and tagging on read makes both backends return the same value.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=timezone.utc)  # naive = UTC (datetime.utcnow() style)
        return value.astimezone(timezone.utc)

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value.astimezone(timezone.utc)


class Base(DeclarativeBase):
    pass


class Meta(Base):
    __tablename__ = "meta"
    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[str] = mapped_column(Text)


class Item(Base):
    __tablename__ = "items"
    key: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    item_id: Mapped[str] = mapped_column(String(512), unique=True)
    split: Mapped[str] = mapped_column(String(8))  # 'pool' | 'test'
    state: Mapped[str] = mapped_column(String(16), default="unlabeled")  # unlabeled|queued|labeled|skipped
    stratum: Mapped[str | None] = mapped_column(String(256), nullable=True)
    label: Mapped[str | None] = mapped_column(Text, nullable=True)  # test label, or hidden pool label
    __table_args__ = (Index("ix_items_split_state", "split", "state"),)


class Run(Base):
    __tablename__ = "runs"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(256), unique=True)
    strategy: Mapped[str] = mapped_column(String(64))
    scorer: Mapped[str] = mapped_column(String(64))
    seed: Mapped[int] = mapped_column(Integer)
    budget: Mapped[int] = mapped_column(Integer)
    batch_size: Mapped[int] = mapped_column(Integer)
    initial: Mapped[int] = mapped_column(Integer)
    config: Mapped[dict] = mapped_column(JSON, default=dict)
    status: Mapped[str] = mapped_column(String(16), default="running")  # running|waiting|complete
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class Label(Base):
    __tablename__ = "labels"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    item_key: Mapped[int] = mapped_column(ForeignKey("items.key"))
    run_id: Mapped[int | None] = mapped_column(ForeignKey("runs.id"), nullable=True)
    value: Mapped[str] = mapped_column(Text)
    source: Mapped[str] = mapped_column(String(16))  # oracle|init|import
    annotator: Mapped[str | None] = mapped_column(String(128), nullable=True)
    cycle: Mapped[int | None] = mapped_column(Integer, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    __table_args__ = (
        UniqueConstraint("run_id", "item_key", name="uq_labels_run_item"),
        Index(
            "uq_labels_shared_item",
            "item_key",
            unique=True,
            sqlite_where=text("run_id IS NULL"),
            postgresql_where=text("run_id IS NULL"),
        ),
    )


class SelectionRow(Base):
    __tablename__ = "selections"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id"))
    cycle: Mapped[int] = mapped_column(Integer)
    item_key: Mapped[int] = mapped_column(ForeignKey("items.key"))
    rank: Mapped[int] = mapped_column(Integer)
    score: Mapped[float] = mapped_column(Float)
    utility: Mapped[float] = mapped_column(Float)
    selector: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    __table_args__ = (UniqueConstraint("run_id", "item_key", name="uq_selections_run_item"),)


class CycleRow(Base):
    __tablename__ = "cycles"
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id"), primary_key=True)
    cycle: Mapped[int] = mapped_column(Integer, primary_key=True)
    n_labeled: Mapped[int] = mapped_column(Integer)
    n_selected: Mapped[int] = mapped_column(Integer)
    metrics: Mapped[dict] = mapped_column(JSON, default=dict)
    fit_s: Mapped[float] = mapped_column(Float, default=0.0)
    score_s: Mapped[float] = mapped_column(Float, default=0.0)
    select_s: Mapped[float] = mapped_column(Float, default=0.0)
    n_scored: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class RunLease(Base):
    """One row per run name while a process drives it: a second `alkit run` of the same run is
    refused as busy instead of racing the first on the same cycle."""

    __tablename__ = "run_leases"
    run_name: Mapped[str] = mapped_column(String(256), primary_key=True)
    token: Mapped[str] = mapped_column(String(64))  # random per holder: only the holder renews or releases
    host: Mapped[str] = mapped_column(String(256))
    pid: Mapped[int] = mapped_column(Integer)
    acquired_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    heartbeat_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class CycleSignals(Base):
    """Per cycle, what stopping rules read (alkit/stopping/): written in the cycle's transaction."""

    __tablename__ = "cycle_signals"
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id"), primary_key=True)
    cycle: Mapped[int] = mapped_column(Integer, primary_key=True)
    data: Mapped[dict] = mapped_column(JSON, default=dict)
