"""Project configuration: alkit.toml, validated on load with errors that name the problem."""

from __future__ import annotations

import os
import shlex
import tomllib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import tomli_w

from alkit.errors import keep_labels_advice

CONFIG_NAME = "alkit.toml"
FEATURES_NAME = "features.parquet"
PAYLOAD_NAME = "payload.parquet"
# alkit's row key in payload.parquet, beside the data columns; projects made before 2026-12-06 call it
# "key", which overwrote a data column of that name (its values were lost, the queue export crashed)
PAYLOAD_KEY = "_alkit_key"
DEFAULT_DB = "alkit.db"


class ConfigError(ValueError):
    """The project configuration is missing or invalid."""


def payload_key(path: Path) -> str:
    """The name of alkit's row key in the payload file at ``path`` (PAYLOAD_KEY, or an older project's "key")."""
    import pyarrow.parquet as pq

    return PAYLOAD_KEY if PAYLOAD_KEY in pq.read_schema(path).names else "key"


def missing_indicator(col: str) -> str:
    """The name of the 0/1 feature marking an imputed column's missing cells (init --impute)."""
    return f"{col}=missing"


PROJECT_FORMAT = 2  # 2: the payload's row key is _alkit_key, init records the class order in the store

_FIELD_TYPES = {"task": "str", "id_col": "str", "label_col": "str", "n_items": "int", "n_features": "int",
                "store": "str", "classes": "list[str]", "feature_cols": "list[str]", "feature_col": "str",
                "hide_labels": "bool", "test_frac": "float", "seed": "int", "source": "str",
                "payload_cols": "list[str]", "encoder": "str", "split_col": "str", "image_shape": "list[int]",
                "image_col": "str", "one_hot": "list[str]", "imputed": "list[str]", "format": "int",
                "store_token": "str"}
_KIND_WORDS = {"str": "a string", "int": "an integer", "bool": "true or false", "float": "a number",
               "list[str]": "a list of strings", "list[int]": "a list of integers"}


def _is_kind(value: Any, kind: str) -> bool:
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "float":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "str":
        return isinstance(value, str)
    inner = kind[5:-1]
    return isinstance(value, list) and all(_is_kind(v, inner) for v in value)


@dataclass
class ProjectConfig:
    task: str  # classification | regression
    id_col: str
    label_col: str
    n_items: int
    n_features: int
    store: str  # SQLAlchemy URL; sqlite:///relative/path is relative to the project dir
    classes: list[str] = field(default_factory=list)
    feature_cols: list[str] = field(default_factory=list)
    feature_col: str = ""
    hide_labels: bool = False
    test_frac: float = 0.2
    seed: int = 0
    source: str = ""
    payload_cols: list[str] = field(default_factory=list)
    encoder: str = ""  # text/image encoder used to compute the features, if any
    split_col: str = ""  # column whose test/pool marks gave the test split (init --split-col), if any
    image_shape: list[int] = field(default_factory=list)  # [C, H, W] of pixel features (row-major), if any
    image_col: str = ""  # payload column of image paths (init --image-col; relative to source's folder), if any
    one_hot: list[str] = field(default_factory=list)  # categorical columns one-hot encoded into the features
    imputed: list[str] = field(default_factory=list)  # columns whose missing cells got the pool's median (init --impute)
    # the project layout's version: init writes PROJECT_FORMAT, a project made before has none (1).  An alkit older
    # than the key refuses it as unknown ('unknown keys ['format']'), where one of 2026-12-05 ran on a newer project
    # and forked its runs under its own names; a newer format is refused here by the same rule
    format: int = 1
    # the random token init wrote into the store's meta (init_token): a store of the same data made by another init
    # (another test split) passed every other check, and runs were scored on its split (a black-box check); "" for a
    # project made before it was recorded
    store_token: str = ""

    @property
    def input_kind(self) -> str:
        """'embedding' (a list column or an encoder's vectors), 'image' (pixel columns of --image-shape) or 'raw'."""
        if self.feature_col or self.encoder:
            return "embedding"
        return "image" if self.image_shape else "raw"

    def __post_init__(self) -> None:
        for name, kind in _FIELD_TYPES.items():  # alkit.toml is hand-editable: check every field's type
            value = getattr(self, name)
            if not _is_kind(value, kind):
                raise ConfigError(f"{name} must be {_KIND_WORDS[kind]}, not {value!r}")
        for name in ("n_items", "n_features"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be at least 1, not {getattr(self, name)}")
        if not 0.0 <= self.test_frac < 1.0:
            raise ConfigError(f"test_frac must be in [0, 1), not {self.test_frac}")
        if self.format < 1:
            raise ConfigError(f"format must be at least 1, not {self.format}")
        if self.format > PROJECT_FORMAT:
            raise ConfigError(f"the project was made by a newer alkit (project format {self.format}; this alkit reads "
                              f"up to {PROJECT_FORMAT}): upgrade alkit to use it")
        if self.task not in ("classification", "regression"):
            raise ConfigError(f"task must be classification or regression, not {self.task!r}")
        if self.task == "classification" and len(self.classes) < 2:
            raise ConfigError(f"classes holds {len(self.classes)} name{'' if len(self.classes) == 1 else 's'}: a "
                              "classification project needs at least 2")
        self._check_feature_cols()
        if self.image_shape:
            shape = self.image_shape
            if len(shape) != 3 or any(not isinstance(v, int) or v < 1 for v in shape):
                raise ConfigError(f"image_shape must be 3 positive integers [C, H, W], not {shape}")
            if min(shape[1:]) < 3:  # as init --image-shape refuses it (a torch traceback at the first fit)
                raise ConfigError(f"image_shape {shape}: an image side below 3 pixels is too small for the image "
                                  "stem's 3 x 3 filters")
            if shape[0] * shape[1] * shape[2] != self.n_features:
                raise ConfigError(f"image_shape {shape} holds {shape[0] * shape[1] * shape[2]} values "
                                  f"but the project has {self.n_features} features")

    @property
    def n_classes(self) -> int | None:
        return len(self.classes) if self.task == "classification" else None

    def made_as(self) -> dict[str, Any]:
        """The settings a store is made for, fixed at init and checked against it (Store.check_made_as)."""
        # feature_cols: names swapped or renamed by hand shifted an export's feature values (a check)
        return {"task": self.task, "hide_labels": bool(self.hide_labels), "feature_cols": list(self.feature_cols)}

    def _check_feature_cols(self) -> None:
        """feature_cols names the columns of features.parquet after an encoder's vectors, one name each: a
        name deleted or added by hand shifted every later one, and an export wrote another column's values."""
        if not self.feature_cols:
            return
        twice = sorted({c for c in self.feature_cols if self.feature_cols.count(c) > 1})
        if twice:
            raise ConfigError(f"feature_cols names {', '.join(map(repr, twice[:3]))} more than once")
        named = len(self.feature_cols)
        if self.encoder and not named < self.n_features or not self.encoder and named != self.n_features:
            raise ConfigError(f"feature_cols holds {named} names but the project has {self.n_features} features"
                              + (" (its encoder's vectors first)" if self.encoder else "")
                              + ": restore the list init wrote")

    def feature_index(self, name: str) -> int:
        """The column of features.parquet that holds the feature column ``name``: an encoder's vectors
        come first, then the feature_cols (a text project's --features exported the encoder's first
        dimensions under their names)."""
        return self.n_features - len(self.feature_cols) + self.feature_cols.index(name)

    def data_feature_cols(self) -> list[str]:
        """The feature columns that are numeric columns of the data file, as written: not a
        categorical column's one-hot indicators nor an imputed column's missing_indicator (none for
        a --feature-col vector)."""
        derived = {missing_indicator(c) for c in self.imputed}
        return [c for c in self.feature_cols
                if c not in derived and not any(c.startswith(f"{o}=") for o in self.one_hot)]


@dataclass
class Project:
    """A project directory: its config, where its files are, and its store URL resolved."""

    root: Path
    config: ProjectConfig

    @property
    def features_path(self) -> Path:
        return self.root / FEATURES_NAME

    @property
    def payload_path(self) -> Path:
        return self.root / PAYLOAD_NAME

    @property
    def store_url(self) -> str:
        return resolve_store_url(self.config.store, self.root)

    def cli_flag(self) -> str:
        """' --project DIR' for the commands a hint shows, unless the project is the current folder; the
        folder shell-quoted, so the command can be pasted (a '#' in it commented the rest out, a black-box
        check); with the current folder gone (deleted under the shell) the flag is given."""
        try:
            here = self.root.resolve() == Path.cwd().resolve()
        except OSError:
            here = False
        return "" if here else f" --project {shlex.quote(str(self.root))}"

    def own_files(self) -> list[Path]:
        """The files `alkit init` wrote and the SQLite store's companions (-wal, -shm, -journal), resolved:
        what no command may write over (a queue exported onto features.parquet or alkit.db replaced it)."""
        files = [self.root / CONFIG_NAME, self.features_path, self.payload_path]
        url = self.store_url
        if url.startswith("sqlite:///") and url != "sqlite:///:memory:":
            db = Path(url[len("sqlite:///"):])
            files += [db, *(db.with_name(db.name + end) for end in ("-wal", "-shm", "-journal"))]
        return [f.resolve() for f in files]

    def require(self, *paths: Path, why: str, readable: bool = False) -> None:
        """Refuse, naming the file, where a file `alkit init` wrote is gone: checked before a command
        changes anything, so a damaged project fails at once instead of after a batch is committed."""
        for path in paths:
            if not path.is_file():
                raise ConfigError(f"{path} is missing ({why}); the project folder is damaged: restore the file"
                                  f"{self._restore_advice(path)}")
            if readable and path.suffix == ".parquet":  # a truncated file failed only when read, after a cycle
                # was committed (the features file has a reader of its own that names what is wrong)
                import pyarrow.parquet as pq

                try:
                    names = pq.read_schema(path).names
                except Exception as exc:  # noqa: BLE001 - pyarrow's errors name no file
                    raise ConfigError(f"{path} is damaged ({why}; {str(exc).splitlines()[0][:200]}): restore it"
                                      f"{self._restore_advice(path)}") from None
                lacks = [c for c in self.config.payload_cols if c not in names] if path.name == PAYLOAD_NAME else []
                if lacks:  # a hand edit: a polars traceback at the export, after a run had committed its batch
                    raise ConfigError(f"alkit.toml's payload_cols names {', '.join(map(repr, lacks[:5]))}, which "
                                      f"{path.name} does not hold: restore alkit.toml's payload_cols")

    def _restore_advice(self, path: Path) -> str:
        """What follows 'restore it' for a missing or damaged project file: how to keep people's labels while
        starting over, except for the payload, which that way reads (it was advised, then refused)."""
        if path.name == PAYLOAD_NAME:
            return " (the store still holds every label, and `alkit queue labels` writes them from it once it is back)"
        return f", or {keep_labels_advice(self.cli_flag())}"

    def encode_label(self, value: str) -> float | int:
        """Stored label text -> what the learner trains on (class index or float)."""
        if self.config.task == "classification":
            try:
                return self.config.classes.index(value)
            except ValueError:
                raise ValueError(f"unknown class {value!r}; known: {', '.join(self.config.classes)}") from None
        return float(value)


# The largest regression label alkit takes: learners and metrics run in 32-bit floats, where a
# target of 1e20 already gave an infinite CRPS and 1e39 (beyond float32) a failed fit; up to 1e18 the
# fits and metrics stayed finite (a 1e15 outlier among values near 20), so 1e15 leaves a margin.
REGRESSION_LABEL_MAX = 1e15

STORE_URL_ENV = "ALKIT_STORE_URL"  # the store URL with its password, kept out of alkit.toml


def resolve_store_url(url: str, root: Path) -> str:
    """The URL to connect with: a relative SQLite path resolved against the project, and for an
    external store the password from $ALKIT_STORE_URL when that names the same database (same
    backend, user, host, port and database, whatever driver it spells: ``postgresql://`` beside
    alkit.toml's ``postgresql+psycopg://`` was called another store; the connection keeps alkit.toml's
    driver); otherwise it is ignored, and libpq's PGPASSWORD or ~/.pgpass still apply."""
    prefix = "sqlite:///"
    if url.startswith(prefix) and not url.startswith(prefix + "/") and url != "sqlite:///:memory:":
        return prefix + str((root / url[len(prefix):]).resolve())
    env = os.environ.get(STORE_URL_ENV)
    if env and not url.startswith("sqlite"):
        from sqlalchemy.engine import make_url
        from sqlalchemy.exc import ArgumentError

        try:
            given, full = make_url(url), make_url(env)
        except ArgumentError:
            raise ConfigError(f"${STORE_URL_ENV} is not a valid store URL") from None
        if given.password is None and store_identity(env) == store_identity(url):
            return given.set(password=full.password).render_as_string(hide_password=False)
    return url


def load_project(root: str | Path = ".") -> Project:
    root = Path(root).resolve()
    path = root / CONFIG_NAME
    if not path.exists():
        if root.is_file() and (root.name == CONFIG_NAME or (root.parent / CONFIG_NAME).is_file()):
            raise ConfigError(f"{root} is a file: -p takes the project's folder ({root.parent})")
        raise ConfigError(f"no alkit project in {root} ({CONFIG_NAME} not found); create one with `alkit init`")
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8-sig"))  # UTF-8 in any locale; Notepad adds a BOM
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from exc
    except UnicodeDecodeError as exc:  # the codec's words alone did not name the file (a hostile-filesystem check)
        raise ConfigError(f"{path} is not UTF-8 text ({exc.reason} at byte {exc.start}): restore it, or save it as "
                          "UTF-8") from exc
    section: dict[str, Any] = raw.get("project", {})
    known = set(ProjectConfig.__dataclass_fields__)
    unknown = set(section) - known
    if unknown:
        raise ConfigError(f"{path}: unknown keys {sorted(unknown)}")
    import dataclasses

    missing = [f.name for f in dataclasses.fields(ProjectConfig) if f.name not in section
               and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
    if missing:  # Python's words ('ProjectConfig.__init__() missing 1 required positional argument') named no key
        raise ConfigError(f"{path} lacks the key{'s' if len(missing) > 1 else ''} {', '.join(missing)} that `alkit "
                          "init` wrote: restore it")
    try:
        cfg = ProjectConfig(**section)
    except TypeError as exc:
        raise ConfigError(f"{path}: {exc}") from exc
    except ConfigError as exc:  # a value's own refusal, named by the file it is in
        raise ConfigError(f"{path}: {exc}") from exc
    return Project(root, cfg)


def without_password(url: str) -> str:
    """The store URL as alkit.toml keeps it: never with a password (ALKIT_STORE_URL, PGPASSWORD or
    ~/.pgpass supply it when the store is opened)."""
    if url.startswith("sqlite"):
        return url
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    return url if parsed.password is None else _drop_password(parsed).render_as_string(hide_password=False)


def store_identity(url: str) -> str:
    """A server store's URL with no password, its backend without the driver (postgresql+psycopg and
    postgresql name one database), no connection options (connect_timeout, sslmode: an init retried with one could
    not clear a killed init's tables, and $ALKIT_STORE_URL with one was ignored; a black-box check) and libpq's
    default port as none, always rendered alike: what names the store, to compare two URLs or hash one."""
    from sqlalchemy.engine import URL, make_url

    u = make_url(url)

    def same(key: str, value: Any) -> Any:  # a socket folder with or without its last '/' is one folder
        if key == "host":
            return tuple(v.rstrip("/") or "/" for v in value) if isinstance(value, tuple) else value.rstrip("/") or "/"
        return value

    query = {k: same(k, v) for k, v in u.query.items() if k in _STORE_QUERY_NAMES and k != "port"}
    port = str(u.port if u.port is not None else u.query.get("port", ""))  # the URL's or the query's: one place
    if u.get_backend_name() == "postgresql" and port == "5432":  # libpq's default, written out or not
        port = ""
    return URL.create(u.get_backend_name(), u.username, None, u.host, int(port) if port.isdigit() else None,
                      u.database, query).render_as_string(hide_password=False)


# the query parameters of a server store's URL that say which database it is (libpq's); the others are options
_STORE_QUERY_NAMES = ("host", "hostaddr", "port", "dbname", "user", "service",
                      "options")  # options may name a schema (-c search_path=...): another set of tables


def _drop_password(u: Any) -> Any:
    """The same sqlalchemy URL without its password (URL.set treats None as "unchanged")."""
    from sqlalchemy.engine import URL

    return URL.create(u.drivername, u.username, None, u.host, u.port, u.database, u.query)


def write_config(root: Path, cfg: ProjectConfig, name: str = CONFIG_NAME) -> Path:
    """alkit.toml; readable by its owner only when it names an external store (user, host, db)."""
    path = root / name
    fields = asdict(cfg)
    if not fields["store_token"]:  # a project made before it: an older alkit reads the file on (a teammate's)
        del fields["store_token"]
    text = tomli_w.dumps({"project": fields})
    private = not cfg.store.startswith("sqlite")
    # 0666 less the umask otherwise, as every other file of the project (0644 fixed: a team's umask 002 left the
    # file its teammates could not edit, e.g. for --add-class; an environment check)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if private else 0o666)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        if private:
            os.fchmod(f.fileno(), 0o600)  # also when the file existed with wider permissions
        f.write(text)
    return path
