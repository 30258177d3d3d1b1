"""Whether a store is this project's: the check every command makes before it reads or writes a store.

Why a module of its own: `run`, `bench`, `status`, `plot` and every `queue` command open the store alkit.toml
names, and one that another project made (a copied alkit.db, a store another init took) was read or written as
this project's: `status` said 'no runs yet', an export paired ids with other items' texts, an import filed labels
there (black-box checks).  The id text is init's (``id_text``), so the comparison reads ids as init wrote them.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from alkit.config import Project, payload_key
from alkit.errors import StoreError
from alkit.pools.tables import InputError


def id_text(ids: pl.Series, col: str) -> pl.Series:
    """Ids as text: the file's text, or a number's; a float column of whole numbers (a pandas merge's ids, a JSON
    Lines file with one id written 3.0) as the integers it holds: every id was '5.0', so an answer for the file's 5
    was an unknown id, and ids beyond 2^53 rounded onto one another (a black-box check); one with a fraction or
    beyond 2^53 is refused by row."""
    if isinstance(ids.dtype, (pl.Struct, pl.List, pl.Array)):  # '{0,0}': its field names lost, values could collide
        raise InputError(f"id column {col!r} is of type {ids.dtype}, a structure, not an id: write the ids as integers "
                         "or as text")
    if ids.dtype == pl.Time:  # cast drops the fraction of a second: distinct ids read as duplicates (a black-box check)
        return ids.dt.to_string("%H:%M:%S%.f")
    if not ids.dtype.is_float():
        try:
            return ids.cast(pl.Utf8)
        except pl.exceptions.PolarsError:  # a duration: a traceback at init (a black-box check)
            raise InputError(f"id column {col!r} is of type {ids.dtype}, which has no text form alkit can match "
                              "answers by: write the ids as integers or as text") from None
    bad = ~ids.is_finite() | (ids != ids.round(0)) | (ids.abs() >= 2.0 ** 53)
    if bad.any():
        i = int(bad.arg_true()[0])
        raise InputError(f"id column {col!r} holds numbers that are no whole numbers a float keeps exactly (row "
                          f"{i + 1}: {ids[i]!r}; 1 = the first data row): write the ids as integers or as text")
    return ids.cast(pl.Int64).cast(pl.Utf8)


def check_project_store(project: Project, store: Any) -> None:
    """Refuse (StoreError) a store that does not hold this project's items: the settings it was made for, as many
    items as alkit.toml records, the ids the payload file holds at a few sampled keys, the token its init wrote into
    both (alkit.toml's store_token; projects made before it have none), and the features file it was made with (a store of the same items in another row order passed the ids at its ends, and exports paired each
    id with another item's text; a black-box check)."""
    from alkit.pools.features import FeatureReader

    cfg = project.config
    store.check_made_as(cfg.made_as())
    n = sum(store.counts().values())
    url = project.store_url
    if n != cfg.n_items:
        raise StoreError(f"the store ({url}) holds {n} items, alkit.toml records {cfg.n_items}: it is another "
                         "project's store; restore this project's alkit.db (or its --store)")
    payload = project.payload_path
    if payload.is_file() and cfg.id_col in pl.read_parquet_schema(payload) and payload_key(payload) != cfg.id_col:
        # (an id column named 'key' in a project made before _alkit_key: that init wrote the row keys over it, so
        # the payload holds no ids to compare; the count did)
        keys = sorted({0, n // 2, n - 1})
        stored = store.ids_for_keys(keys)
        try:
            ids = id_text(pl.read_parquet(payload, columns=[cfg.id_col])[cfg.id_col].gather(keys), cfg.id_col)
        except InputError:
            ids = None
        if ids is not None and not any(ids[i] == stored.get(k) for i, k in enumerate(keys)):
            raise StoreError(f"the store ({url}) names item {keys[0]} {stored.get(keys[0])!r}, this project's data "
                             f"{ids[0]!r}: it is another project's store; restore this project's alkit.db (or its "
                             "--store)")
    token = store.init_token() if cfg.store_token else None
    if token is not None and token != cfg.store_token:  # the same data made into a store by another init (another
        # test split): every other check passed it, and runs were scored on that init's split (a black-box check)
        raise StoreError(f"the store ({url}) was made by another `alkit init` than this project's "
                         "(its token differs from alkit.toml's store_token): it is another project's store; restore "
                         "this project's alkit.db (or its --store)")
    if project.features_path.is_file():
        store.check_features(FeatureReader(project.features_path).file_id, project.features_path.name)
