"""`alkit` command line: parse, call the library, render.  No logic lives here."""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import inspect
import json
import os
import re
import shlex
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Optional

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich import box
from rich.table import Table

from alkit import cli_common
from alkit.cli_common import (INTERRUPTED, Acquisition, Covariance, Engine, Head, InitialSelector, ProjectOpt, Scorer,
                              Strategy, Task,
                              console, err, interrupt_said, on_interrupt, one_line, say_interrupted, use_threads,
                              user_errors, was_interrupted)
from alkit.cli_common import parse_counts, utf8_path
from alkit.cli_common import parse_csv as _parse_csv
from alkit.cli_tables import bench_table, print_table, summary_table
from alkit.choices import METRICS, SEED_MAX, fold_case
from alkit.config import CONFIG_NAME, STORE_URL_ENV, load_project
if TYPE_CHECKING:
    from alkit.pools.store import Store
    from alkit.loop import ActiveLoop, RunRequest

app = cli_common.typer_app("alkit: active learning with analytic, single-pass epistemic uncertainty.")


def _store(url: str) -> Store:
    """The project's store, imported here so `alkit --help` loads no SQLAlchemy."""
    from alkit.pools.store import Store

    return Store(url)


def _project_store(proj: Any) -> Store:
    """The project's store, refused where it holds another project's items (ownership.check_project_store): `status`
    said 'no runs yet' of a store another init had taken, which only `run` refused (a black-box check)."""
    from alkit.pools.ownership import check_project_store

    store = _store(proj.store_url)
    check_project_store(proj, store)
    return store


def _show_version(value: bool) -> None:
    if value:
        from alkit import __version__

        print(f"alkit {__version__}")
        raise typer.Exit()


def _check_threads(ctx: typer.Context, value: int) -> int:
    """At least 1, refused in the words of where it came from: `--threads 0` was blamed on ALKIT_THREADS, unset
    (a documentation check)."""
    if value < 1:
        source = ctx.get_parameter_source("threads")  # typer's own click: compared by name
        where = "ALKIT_THREADS" if getattr(source, "name", "") == "ENVIRONMENT" else "--threads"
        raise typer.BadParameter(f"{where} must be at least 1, not {value}", param_hint="'--threads'")
    return value


@app.callback()
def _global(
    version: bool = typer.Option(False, "--version", callback=_show_version, is_eager=True,
                                 help="Print alkit's version and exit."),
    threads: int = typer.Option(1, "--threads", envvar="ALKIT_THREADS", callback=_check_threads,
                                help="torch CPU threads (1 is fastest for small networks on a busy machine)."),
) -> None:
    """alkit: active learning with analytic, single-pass epistemic uncertainty."""
    cli_common.THREADS = threads  # applied by the commands that compute (use_threads), not for --help



# column names that usually hold a row id (R's rownames, pandas' "Unnamed: 0", ...): a hint when one is a feature
SMALL_TEST = 30  # a test split below this many items gets a note: its accuracy is mostly noise
ID_LIKE_COLUMNS = ("id", "rownames", "row_id", "rowid", "index", "unnamed: 0", "key", "uid", "item_id")

@app.command()
def init(
    data: Path = typer.Argument(..., metavar="DATA", callback=utf8_path, help="CSV (.csv), TSV (.tsv, .tab), JSON Lines (.jsonl, .ndjson) or Parquet (.parquet, .pq) file, one row per item."),
    id_col: Optional[str] = typer.Option(None, "--id-col", help="Column with a unique id per row (default: none; the items are named by their row number, 1 for the first data row, in the store and in queue files: keep the file's row order)."),
    label_col: str = typer.Option(..., "--label-col", help="Column with the label (empty for unlabeled rows)."),
    features: Optional[str] = typer.Option(None, "--features", help="Comma-separated feature columns (default: all other columns); categorical text columns (<= 50 values) are one-hot encoded."),
    feature_col: Optional[str] = typer.Option(None, "--feature-col", help="One list column holding the feature vector."),
    exclude: Optional[str] = typer.Option(None, "--exclude", help="Comma-separated columns that are no features (notes, titles, ...; they stay in exports)."),
    task: Optional[Task] = typer.Option(None, "--task", help="The task (default: inferred from the labels)."),
    test_frac: Optional[float] = typer.Option(None, "--test-frac", help="With --hide-labels: fraction of rows held out as the test split (default 0.2; stratified by class for classification)."),
    seed: int = typer.Option(0, "--seed", min=0, max=SEED_MAX, help="Seed of the test split."),
    store: Optional[str] = typer.Option(None, "--store", help="SQLAlchemy URL of the store (default: sqlite file alkit.db in the project)."),
    hide_labels: bool = typer.Option(False, "--hide-labels", help="Keep pool labels from the learner; the simulated oracle reveals them when items are selected (benchmarks)."),
    initial_labeled: int = typer.Option(0, "--initial-labeled", help="Without --hide-labels: labeled rows given to the learner up front instead of the test split."),
    text_col: Optional[str] = typer.Option(None, "--text-col", help="Text column to embed with the frozen MiniLM encoder (extra: alkit[text])."),
    image_col: Optional[str] = typer.Option(None, "--image-col", help="Image-path column to embed with EfficientNet-Lite0 (extra: alkit[image]); relative paths are relative to DATA."),
    cache_dir: Optional[Path] = typer.Option(None, "--cache-dir", parser=utf8_path, metavar="<path>", help="Embedding cache (default: .alkit-cache beside DATA)."),
    split_col: Optional[str] = typer.Option(None, "--split-col", help="Column marking each row test or pool (or train): the test split, instead of --test-frac."),
    image_shape: Optional[str] = typer.Option(None, "--image-shape", help="H,W or C,H,W: the features are the pixels of an image of that shape (row-major, channels first)."),
    allow_outside_paths: bool = typer.Option(False, "--allow-outside-paths", help="Let --image-col paths point outside DATA's folder (refused by default)."),
    impute: bool = typer.Option(False, "--impute", help="Fill missing numeric feature cells (empty, NA, NaN) with the column's median over the pool rows and add a 0/1 feature COL=missing (default: refuse them)."),
    classes: Optional[str] = typer.Option(None, "--classes", help="Comma-separated class names of a classification project, declared: for a pool no one has labelled yet, or classes its labels do not show yet (default: the label column's values)."),
    project: Path = ProjectOpt,
) -> None:
    """Create a project from a data file: alkit.toml, features as Parquet, the SQL store."""
    use_threads()
    from alkit.pools.ingest import (InitOptions, init_project, label_values, parse_image_shape, regression_hint,
                                    pixel_shape_hint)

    with _created_on_interrupt(project):
        with user_errors():
            if features and feature_col:
                raise ValueError("pass either --features or --feature-col, not both")
            opts = InitOptions(id_col=id_col or "", label_col=label_col, features=_parse_csv(features), feature_col=feature_col,
                               exclude=_parse_csv(exclude),
                               task=task, test_frac=test_frac, seed=seed, store=store, hide_labels=hide_labels,
                               initial_labeled=initial_labeled, text_col=text_col, image_col=image_col,
                               cache_dir=cache_dir, split_col=split_col, allow_outside_paths=allow_outside_paths, impute=impute,
                               image_shape=parse_image_shape(image_shape) if image_shape is not None else None,
                               classes=_parse_csv(classes, "class", keep_empty=True) if classes is not None and classes.strip()
                               else None if classes is None else [""])  # quoted names keep their commas, as --features
            notes: list[str] = []
            cfg = init_project(data, project, opts, notes)
            external = store is not None and not store.startswith("sqlite")
            counts = _store(store if external else load_project(project).store_url).counts()  # the URL as typed
        if external and cfg.store != store:
            console.print(f"the store's password is not kept in {CONFIG_NAME} (owner-only, 0600): give it to later "
                          f"commands as ${STORE_URL_ENV} (the full URL) or with PGPASSWORD / ~/.pgpass")
        pool = sum(v for k, v in counts.items() if k.startswith("pool:"))
        test = sum(v for k, v in counts.items() if k.startswith("test:"))
        classes = f", {len(cfg.classes)} classes" if cfg.classes else ""
        console.print(f"[green]created[/] project in {project.resolve()}: {cfg.task}{classes}, "
                      f"{cfg.n_features} features, {pool} pool items, {test} test items"
                      + (" (pool labels hidden: simulated oracle)" if cfg.hide_labels else ""))
        if pool and not counts.get("pool:unlabeled", 0):  # a run then fails: 'larger than the unlabeled pool (0 items)'
            console.print("note: every pool item already has a label, so there is nothing left to select; to simulate "
                          "labelling the pool from those labels, init again with --hide-labels")
        if 0 < test < SMALL_TEST:
            noise = (f"its accuracy moves in steps of 1/{test}" if cfg.task == "classification"
                     else "its error figures (CRPS, RMSE) rest on that few targets")
            console.print(f"note: the test split holds {test} item{'' if test == 1 else 's'}, so {noise} and the learning "
                          "curves mostly show that noise; give it more rows ("
                          + ("more rows marked test in the --split-col column" if split_col else
                             "--test-frac, --split-col or more labelled rows" if cfg.hide_labels else
                             # --test-frac needs --hide-labels: it named an option this project refuses (a black-box check)
                             "more labelled rows in the data file, or --split-col") + ")")
        for note in notes:
            console.print(note, highlight=False)
        if test == 0:
            unlabelled = not any(v for k, v in counts.items() if k in ("pool:labeled", "pool:shared"))
            how = ("label a few hundred rows in the file (without --hide-labels the labelled rows are the test split, "
                   "or mark them test with --split-col)" if unlabelled and not cfg.hide_labels
                   else "give one with --test-frac, --split-col or labelled rows" if cfg.hide_labels
                   # --test-frac needs --hide-labels: it named an option this project refuses (a peer-user check)
                   else "mark rows test with --split-col, or leave labelled rows out of --initial-labeled: without "
                        "--hide-labels they are the test split")
            what = "accuracy" if cfg.task == "classification" else "test error (CRPS, RMSE)"
            console.print(f"note: no test split, so runs will record no {what} and `alkit plot` has no curve to "
                          f"draw ({how}; `--stop forecast` estimates a curve by cross-validation instead)")
        if not id_col:
            console.print(f"no --id-col: the items are named by their row number (1 = the first data row; column "
                          f"'{cfg.id_col}' in the payload), and queue files use these numbers: keep the file's row order")
            id_like = [c for c in cfg.feature_cols if c.lower() in ID_LIKE_COLUMNS]
            if id_like:  # a row id learned from as a feature: on a file sorted by class, it gives the answer away
                console.print(f"hint: column {id_like[0]!r} looks like a row id and is a feature; if it is one, init again "
                              f"with --id-col {id_like[0]} (or --exclude {id_like[0]})")
        if cfg.one_hot:
            n_levels = {c: sum(f.startswith(f"{c}=") for f in cfg.feature_cols) for c in cfg.one_hot}
            console.print("one-hot encoded (categorical text columns, one 0/1 feature per value): "
                          + ", ".join(f"{c} ({k} value{'' if k == 1 else 's'})" for c, k in n_levels.items()))
        if cfg.imputed:
            console.print("imputed (missing cells set to the pool's median, each column followed by a 0/1 feature "
                          f"COL=missing): {', '.join(cfg.imputed)}")
        elif impute:
            console.print("--impute: no feature column has a missing cell")
        why = regression_hint(label_values(data, label_col)) if task is None and cfg.task == "classification" else None
        if why:
            console.print(f"hint: the labels are {len(cfg.classes)} whole numbers ({why}), taken as classes; if they "
                          "are counts, amounts or measurements, init again with --task regression")
        cased: dict[str, list[str]] = {}
        for c in cfg.classes:
            cased.setdefault(fold_case(c), []).append(c)
        same = [v for v in cased.values() if len(v) > 1]
        if same:  # barolo / Barolo / BAROLO were three classes without a word (a black-box check)
            console.print(f"hint: classes that differ only in case or character width: {'; '.join(', '.join(map(repr, v)) for v in same[:3])}"
                          f"{' ...' if len(same) > 3 else ''}; if they are one class, spell them alike in the data file "
                          "and init again")
        from alkit.choices import class_number

        numbered: dict[float, list[str]] = {}
        for c in cfg.classes:
            x = class_number(c)
            if x is not None:
                numbered.setdefault(x, []).append(c)
        twins = [v for v in numbered.values() if len(v) > 1]
        if twins:  # '1', '1.0' and '01' were three classes without a word where a code with a leading zero was among
            # them (a black-box check); an import of '1.00' is then refused as the number of several classes
            console.print(f"hint: classes that are one number in other spellings: "
                          f"{'; '.join(', '.join(map(repr, v)) for v in twins[:3])}{' ...' if len(twins) > 3 else ''} "
                          "(a code with a leading zero keeps every spelling a class of its own); if they are one "
                          f"class, spell them alike in {'--classes' if opts.classes else 'the data file'} and init again")
        shape = None if cfg.image_shape or cfg.encoder else pixel_shape_hint(cfg.feature_cols)
        if shape is not None:
            h, w = shape
            console.print(f"hint: the {cfg.n_features} feature columns look like the pixels of {h} x {w} images; "
                          f"if they are, init again with --image-shape {h},{w}: learners then use the image backbone")


@contextlib.contextmanager
def _created_on_interrupt(project: Path) -> Iterator[None]:
    """Ctrl-C once init has moved alkit.toml in (its last step) lands on a complete project: the generic
    'run the same command again' was then refused ('already exists'), so say that the project is made."""
    existed = (project / CONFIG_NAME).exists()
    try:
        yield
    except (KeyboardInterrupt, typer.Exit) as exc:
        made = not existed and (project / CONFIG_NAME).exists()
        if not made or (isinstance(exc, typer.Exit) and exc.exit_code != 130):
            raise
        if isinstance(exc, KeyboardInterrupt) or not interrupt_said():
            say_interrupted(f"interrupted after the project in {project} was made; it is complete (`alkit status"
                            f"{'' if project == Path('.') else ' -p ' + shlex.quote(str(project))}`), and its "
                            "remaining notes were not printed")
        raise typer.Exit(code=130) from None


def _run_with_progress(loop: ActiveLoop, req: RunRequest, quiet: bool = False) -> list:
    progress = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TextColumn("{task.fields[info]}"), TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(),
                        # off the terminal (a pipe, a log file) rich draws the bar once, at the end, cut to
                        # 80 columns: the lines that follow say everything it would, in full
                        console=console, disable=quiet or not console.is_terminal)
    task_ids: dict[str, Any] = {}
    stem_task: dict[str, Any] = {}
    messages: list[tuple[str, str]] = []  # (prefix markup, plain message)

    def on_event(kind: str, p: dict[str, Any]) -> None:
        if kind == "run_start":
            task_ids[p["run"]] = progress.add_task(p["run"], total=p["budget"], completed=p["spent"], info="")
        elif kind == "phase":
            progress.update(task_ids_last(), info=f"cycle {p['cycle']}: {p['phase']}")
        elif kind == "stem":  # the image stem over the pool, once per project
            if "stem" not in stem_task:
                stem_task["stem"] = progress.add_task("image stem (once per project)", total=p["total"], info="")
            progress.update(stem_task["stem"], advance=p["rows"])
        elif kind in ("human_queue", "human_wait"):
            messages.append(("[bold cyan]next:[/]", p["message"]))
        elif kind == "note":
            messages.append(("[bold yellow]note:[/]", p["message"]))
        elif kind == "stopped":
            messages.append(("[bold yellow]stopped:[/]", p["message"]))
        elif kind == "cycle_end":
            m = p["metrics"]
            main = next((f"{k}={m[k]:.3f}" if k == "accuracy" else f"{k}={m[k]:.4g}" for k in ("accuracy", "crps") if k in m), "")
            progress.update(task_ids[p["run"]], advance=p["n_selected"], info=f"cycle {p['cycle']} {main}")
            if not quiet and not console.is_terminal:  # a log file (nohup, CI) had nothing until the run ended
                console.print(f"{p['run']}, cycle {p['cycle']}: {p['n_labeled']} labels{', ' + main if main else ''}, "
                              f"fit {p['fit_s']:.1f} s, score {p['score_s']:.1f} s", highlight=False)

    def task_ids_last() -> Any:
        return list(task_ids.values())[-1]

    loop.on_event = on_event
    with progress:
        results = loop.run(req)
    for prefix, msg in messages:
        (err if quiet else console).print(f"{prefix} {escape(msg)}", highlight=False)
    return results


@app.command()
def embed(
    data: Path = typer.Argument(..., metavar="DATA", callback=utf8_path, help="CSV (.csv), TSV (.tsv, .tab), JSON Lines (.jsonl, .ndjson) or Parquet (.parquet, .pq) file with a text or image-path column."),
    out: Path = typer.Option(..., "--out", "-o", parser=utf8_path, metavar="<path>", help="Parquet file to write: the input plus an 'embedding' list column."),
    text_col: Optional[str] = typer.Option(None, "--text-col", help="Text column to embed (MiniLM, 384-d)."),
    image_col: Optional[str] = typer.Option(None, "--image-col", help="Image-path column to embed (EfficientNet-Lite0, 1280-d)."),
    id_col: Optional[str] = typer.Option(None, "--id-col", help="Id column used to name bad rows in errors."),
    cache_dir: Optional[Path] = typer.Option(None, "--cache-dir", parser=utf8_path, metavar="<path>", help="Embedding cache (default: .alkit-cache beside DATA)."),
    allow_outside_paths: bool = typer.Option(False, "--allow-outside-paths", help="Let --image-col paths point outside DATA's folder (refused by default)."),
) -> None:
    """Embed raw text or images once; then `alkit init OUT --feature-col embedding`."""
    use_threads()
    with user_errors():
        from alkit.embed import embed_file

        n, n_new = embed_file(data, out, text_col=text_col, image_col=image_col, id_col=id_col, cache_dir=cache_dir,
                              allow_outside_paths=allow_outside_paths)
    console.print(f"[green]wrote[/] {out}: {n} row{'' if n == 1 else 's'} embedded ({n_new} encoded, the other "
                  f"{n - n_new} from the cache or repeats of an encoded one)")


@app.command()
def run(
    ctx: typer.Context,
    strategy: Strategy = typer.Option("epistemic", "--strategy", "-s", help="Strategy preset; `alkit strategies` lists them."),
    budget: Optional[int] = typer.Option(None, "--budget", "-b", help="Total labels the run may spend (the initial batch included); required unless --resume."),
    batch_size: int = typer.Option(10, "--batch-size", help="Items selected per cycle."),
    seed: int = typer.Option(0, "--seed", min=0, max=SEED_MAX, help="Run seed (model init, data order, sampling)."),
    initial: Optional[int] = typer.Option(None, "--initial", help="Size of the first, model-free batch (default: --batch-size)."),
    scorer: Optional[Scorer] = typer.Option(None, "--scorer", help="Epistemic scorer (default: the strategy's; see `alkit strategies`)."),
    opt: Optional[list[str]] = typer.Option(None, "--opt", "-o", help="Scorer option key=value, repeatable (e.g. -o epistemic=trace -o width=64; training settings as -o train.FIELD=VALUE, e.g. -o train.prior_l2=30 -o train.steps=200); `alkit strategies --scorer NAME` lists a scorer's options. Recorded with the run."),
    stop: Optional[list[str]] = typer.Option(None, "--stop", help="Stopping rule RULE[:param=value,...], repeatable; the run ends when one fires: kappa[:threshold=0.99,k=3], max-uncertainty[:threshold=0.01], overall-uncertainty[:threshold=0.005], forecast[:gain=0.001,min_points=5,k=3]; with --resume NAME it replaces the run's rules, `--stop none` drops them."),
    learner: Optional[str] = typer.Option(None, "--learner", help="Your scikit-learn estimator instead of alkit's network: package.module:function or file.py:function returning an unfitted estimator (fit + predict_proba / predict); bootstrap members give BALD/EPIG (-o members=5). Pair it with a strategy whose acquisition it can feed (margin, entropy, bald, epig)."),
    backbone: Optional[str] = typer.Option(None, "--backbone", help="Your own network as the feature extractor: package.module:function or path/to/file.py:function, a function (n_features, or (C, H, W) for image projects) -> torch.nn.Module returning (n, d) features. Recorded with the run."),
    model_dir: Optional[Path] = typer.Option(None, "--model-dir", parser=utf8_path, metavar="<path>", help="Scorer bayesvlm: a local CLIP or SigLIP directory (save_pretrained: weights, tokenizer, image processor) or an alkit dual encoder; nothing is downloaded. Implies --scorer bayesvlm."),
    class_prompts: Optional[str] = typer.Option(None, "--class-prompts", help="Scorer bayesvlm: the prompt template, {} = the class name (default \"a photo of a {}\")."),
    head: Optional[Head] = typer.Option(None, "--head", help="VBLL regression head (Gaussian; hetero: Gaussian with input-dependent noise; QR-VBLL quantiles; CR-VBLL buckets); unset: where one target value holds >= 10 % of the labels, buckets unless cross-validated CRPS puts the Gaussian head >= 10 % lower; else Gaussian."),
    cov: Optional[Covariance] = typer.Option(None, "--cov", help="VBLL posterior covariance: shared (the classification and bucket-regression default: one dense S for every class or bucket, ~1.2x a forward pass at 10 classes), dense (one per output, the Gaussian and quantile heads' default; ~6x a forward at 10 classes, 14x for 20 buckets) or diagonal."),
    candidates: Optional[int] = typer.Option(None, "--candidates", help="Candidates m handed to the selector (default 20 x batch)."),
    stratify_by: Optional[str] = typer.Option(None, "--stratify-by", help="Metadata column giving cold-start strata."),
    name: Optional[str] = typer.Option(None, "--name", help="Run name (default: derived from the arguments)."),
    max_epochs: Optional[int] = typer.Option(None, "--max-epochs", help="Cap on minibatch epochs per fit, read from 1,000 labels on (default 200); below that a fit is a fixed number of full-batch steps (-o train.steps=N, default 100)."),
    engine: Engine = typer.Option("local", "--engine", help="Where pool scoring runs: local (this process) or ray (map/reduce over Parquet row groups; same picks)."),
    ray_address: Optional[str] = typer.Option(None, "--ray-address", help="With --engine ray: cluster address (e.g. auto, ray://host:10001); default starts Ray locally."),
    acquisition: Optional[Acquisition] = typer.Option(None, "--acquisition", "-a", help="Score per item (default: the strategy's; `alkit strategies` lists them)."),
    initial_selector: Optional[InitialSelector] = typer.Option(None, "--initial-selector", help="Model-free selector of the first batch (default: the strategy's)."),
    resume: Optional[str] = typer.Option(None, "--resume", help="Continue the run of this name (`alkit status` lists them) with every option it was started with; --budget, if given, extends it (or lowers it, down to what it spent)."),
    json_out: bool = typer.Option(False, "--json", help="Print the run summary as JSON."),
    wide: bool = typer.Option(False, "--wide", help="Every column and metric (the default fits 80 columns)."),
    project: Path = ProjectOpt,
) -> None:
    """Run active learning until the budget is spent; the same command (or --resume NAME) continues a run."""
    use_threads()
    from alkit.loop import ActiveLoop, RunRequest

    with user_errors():
        proj = load_project(project)
        from alkit.presets import get_preset
        from alkit.registry import learner_class
        from alkit.scorer_options import parse_with_training

        if resume is not None:
            # by name: typer runs on its own copy of click, whose ParameterSource is another class
            given = [p.opts[0] for p in ctx.command.params if p.name not in _RESUME_KEEPS
                     and getattr(ctx.get_parameter_source(p.name), "name", "") in ("COMMANDLINE", "ENVIRONMENT")]
            if given:
                raise ValueError(f"--resume {resume} continues the run with the options it was started with: drop "
                                 f"{', '.join(given)}")
            loop = ActiveLoop(proj)
            known = loop.store.runs()
            stored = next((r for r in known if r.name == resume), None)
            if stored is None:
                raise ValueError(f"no run called {resume!r} in this project; runs: "
                                 f"{', '.join(r.name for r in known) or '(none yet)'}")
            from alkit.runs import request_for_run

            req = request_for_run(stored, proj.config.task, budget)
            if stop:  # the rules are no part of what the run is: a continued run may watch with others, or none
                req = dataclasses.replace(req, stop=_stop_rules(stop))
            _run_request(loop, req, json_out, wide, keep_stop=bool(stop))
            return
        if budget is None:
            raise ValueError("--budget is required: the total labels the run may spend (or --resume NAME to continue "
                             "a run with its own)")
        if learner is not None:
            if scorer not in (None, "sklearn"):
                raise ValueError(f"--learner replaces the scorer's network; drop --scorer {scorer}")
            scorer = "sklearn"
        if model_dir is not None and scorer is None:
            scorer = "bayesvlm"
        scorer_name = scorer or get_preset(strategy).default_scorer
        # options with flags of their own: the flag's value (an -o of another value is refused below)
        from alkit.models.user_backbone import canonical_ref

        backbone, learner = (canonical_ref(r, proj.root) if r else r for r in (backbone, learner))
        flags = {"--head": ("head", head), "--cov": ("cov", cov), "--backbone": ("module", backbone),
                 "--learner": ("estimator", learner),
                 "--model-dir": ("model_dir", str(model_dir.expanduser().resolve()) if model_dir is not None else None),
                 "--class-prompts": ("class_prompts", class_prompts)}
        learner_options = {key: value for key, value in flags.values() if value is not None}
        own_options, train_options = parse_with_training(learner_class(scorer_name), scorer_name, opt or [])
        given_twice = [(flag, value, f"-o {key}={own_options[key]}") for flag, (key, value) in flags.items()
                       if value is not None and key in own_options and own_options[key] != value]
        if max_epochs is not None and train_options.get("max_epochs", max_epochs) != max_epochs:
            given_twice.append(("--max-epochs", max_epochs, f"-o train.max_epochs={train_options['max_epochs']}"))
        if given_twice:
            flag, value, other = given_twice[0]
            raise ValueError(f"{flag} {value} and {other} set one option twice: give it once")
        learner_options = {**own_options, **learner_options}
        if max_epochs is not None:
            if max_epochs < 1:  # said by the internal name, 'max_epochs must be at least 1'
                raise ValueError(f"--max-epochs must be at least 1, got {max_epochs}")
            train_options["max_epochs"] = max_epochs
        req = RunRequest(strategy=strategy, budget=budget, batch_size=batch_size, seed=seed, scorer=scorer,
                         initial=initial, name=name, candidates=candidates, stratify_by=stratify_by,
                         learner_options=learner_options,
                         train=train_options,
                         engine=engine, ray_address=ray_address, acquisition=acquisition,
                         initial_selector=initial_selector, stop=_stop_rules(stop))
        # the run's recorded rules watch it however it is continued: without --stop the same command continued
        # with none while --resume kept them (a black-box check); a --stop given replaces them, as with --resume
        _run_request(ActiveLoop(proj), req, json_out, wide, keep_stop=bool(stop), inherit_stop=not stop)


def _is_interrupt(exc: BaseException) -> bool:
    """Whether ``exc`` is Ctrl-C (or SIGTERM): a KeyboardInterrupt or an error with one behind it (an
    ImportError from SciPy's compiled modules), or any error raised after the signal handler saw one (a module
    an interrupted import left half-loaded fails in its own words: RecursionError, AttributeError)."""
    if was_interrupted():  # raised after a Ctrl-C landed inside an import (on_interrupt)
        return True
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, KeyboardInterrupt):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _preload_cycle_modules() -> None:
    """Import what a cycle imports on first use (scikit-learn's k-means and metrics, SciPy's optimiser) before
    the first cycle, so that Ctrl-C during the first cycles lands in alkit's code, not in an import: there
    it was swallowed (the run went on to its budget) or turned into an ImportError traceback.  torch's
    optimisers import torch._dynamo when the first one is made (1.5-4 s here), which cycle 1 reported as fit
    time (iris: 'fit 6.3 s' for 10 labels, then 1.6 s for 20)."""
    import scipy.optimize  # noqa: F401
    import scipy.stats  # noqa: F401
    import sklearn.cluster  # noqa: F401
    import sklearn.decomposition  # noqa: F401
    import sklearn.linear_model  # noqa: F401
    import sklearn.metrics  # noqa: F401
    import sklearn.model_selection  # noqa: F401
    import torch._dynamo  # noqa: F401


_RESUME_KEEPS = ("resume", "budget", "stop", "json_out", "wide", "project")  # what --resume may be given with


def _stop_rules(given: list[str] | None) -> list[str]:
    """--stop's rules; `--stop none` is none (it drops a resumed run's recorded rules)."""
    rules = [re.sub(r"\s*([:,=])\s*", r"\1", r.strip()) for r in given or []]  # ' kappa : k = 2 ' as kappa:k=2
    if "none" in rules and len(rules) > 1:
        raise ValueError("--stop none drops every stopping rule: give it alone")
    return [] if rules == ["none"] else rules


def _run_request(loop: "ActiveLoop", req: "RunRequest", json_out: bool, wide: bool, keep_stop: bool = False,
                 inherit_stop: bool = False) -> None:
    """Plan, run with progress and print the run's summary (inside the caller's user_errors).
    ``keep_stop``: record the request's stopping rules with its run (`--stop ...` on a run that exists);
    ``inherit_stop``: a run that exists goes on with the rules recorded with it (no --stop given)."""
    from alkit.runs import recorded_rules

    plan = loop.resolve(req)
    if inherit_stop:
        stored = next((r for r in loop.store.runs() if r.name == plan.spec.name), None)
        recorded = recorded_rules(stored)
        if recorded and recorded != list(req.stop):
            req = dataclasses.replace(req, stop=recorded)
            plan = loop.resolve(req)
    spec = plan.spec
    if keep_stop:  # recorded by the loop once the run is accepted (a later --resume watches with them too): set here,
        # a command refused after it (a budget below what was spent, a busy run) had dropped the run's rule (a check)
        req = dataclasses.replace(req, replace_stop=True)
    for note in plan.notes:
        err.print(f"note: {escape(note)}", highlight=False, style="dim")
    loop.store.check_run(spec)  # a run refused for other settings encodes nothing (it wrote vlm-features/)
    loop.use_features(plan, progress=not json_out)  # bayesvlm: the model's image features, encoded once
    t0 = time.perf_counter()
    try:
        _preload_cycle_modules()
        # --json: stdout holds the JSON alone; what the user's code prints (an estimator's fit) goes to stderr
        with contextlib.redirect_stdout(sys.stderr) if json_out else contextlib.nullcontext():
            results = _run_with_progress(loop, req, quiet=json_out)
    except (KeyboardInterrupt, Exception) as exc:  # the lease is released and the unfinished cycle will be redone
        if not _is_interrupt(exc):
            raise
        run = next((r for r in loop.store.runs() if r.name == spec.name), None)
        if run is None:  # stopped while reading the pool, before the run was recorded: nothing to resume
            say_interrupted(f"interrupted before run {spec.name} started (nothing was recorded); run the same command "
                            "to start it")
        elif run.status == "complete" and loop.store.n_spent(run.id) >= spec.budget:  # no cycle to continue
            say_interrupted(f"interrupted; run {spec.name} is complete (its budget of {spec.budget} labels is spent), "
                            "nothing is left to continue")
        elif run.status == "stopped":  # the same command does nothing: only a larger budget goes on (a black-box round)
            say_interrupted(f"interrupted; run {spec.name} was stopped by its --stop rule: a larger --budget continues it "
                            f"(`alkit run --resume {shlex.quote(spec.name)} --budget N{loop.project.cli_flag()}`)")
        elif run.status == "waiting" and loop.oracle.waiting(run.id):  # its batch is with people: labels come first
            # (a 'waiting' run whose answers were all imported is ready: the import was asked for again; a check)
            say_interrupted(f"interrupted; run {spec.name} waits for the labels of its queued items: import them "
                            f"(`alkit queue import FILE{loop.project.cli_flag()}`), then run the same command to continue")
        else:
            say_interrupted(f"interrupted at cycle {loop.store.next_cycle(run.id)} of run {spec.name}; run the same "
                            f"command (or `alkit run --resume {shlex.quote(spec.name)}{loop.project.cli_flag()}`) to continue")
        raise typer.Exit(code=130) from None
    elapsed = time.perf_counter() - t0
    from alkit.report import run_summaries

    rows = _with_no_model(loop.store, loop.cfg, [r for r in run_summaries(loop.store, loop.project.config)
                                                 if r["name"] == spec.name], loop.project.cli_flag())
    one_class = rows[0]["no_model"] if rows else None
    if one_class:
        err.print(f"note: {escape(one_class)}", highlight=False)
    if not results and rows and rows[0].get("status") == "complete":  # said nothing: a rerun looked like a run
        err.print(f"note: run {escape(spec.name)} had nothing left to do: its budget of {spec.budget} labels is spent "
                  "(a larger --budget extends it)", highlight=False)
    if json_out:  # cycles_run: a script tells 'nothing left to do' (0) from a run without reading stderr's note
        print(json.dumps([{**r, "cycles_run": len(results)} for r in rows], default=str))  # plain, as every --json
        return
    # the time of the cycles run; none ran (a waiting or complete run): the title showed the load time as theirs
    title = f"run {spec.name} ({elapsed:.1f} s)" if results else f"run {spec.name} (no cycle to run)"
    print_table(console, summary_table(rows, title, wide, console.width), wide)


def _one_class_note(store: Any, cfg: Any, run_name: str, where: str = "") -> str | None:
    """Why a classification run has no metrics when every label it learns from is one class (a 99 %
    class and a small budget): it 'completed' with no model fitted and said nothing (`run`; `status` showed
    it as a plain 'complete' with blank metrics, a black-box check)."""
    if cfg.task != "classification":
        return None
    run = next((r for r in store.runs() if r.name == run_name), None)
    values = set(store.labeled_set(run.id)[1]) if run is not None else set()
    if len(values) != 1:
        return None
    spread = ("--stratify-by COL" if (run.config or {}).get("initial_selector") == "coldstart"
              else "--strategy coldstart (--stratify-by COL)")  # the preset's picks already were coldstart's
    # an earlier cycle's model (labels of several classes, since replaced by skips or one class) picked its batch:
    # 'every pick was made without one' was false there, and a waiting run's next step is the queue (a check)
    fitted = any(c.fit_s > 0 for c in store.cycles(run.id))
    what = ("its latest cycle could fit no model (two classes are needed)" if fitted else
            "no model could be fitted (two classes are needed) and every pick was made without one")
    from alkit.pools.queue import n_waiting

    # a waiting run whose answers are all in ('ready') has no queue to label: it was told to import labels no
    # item awaited; with budget left its next batch may reach another class, else only a larger budget
    if run.status == "waiting" and n_waiting(store, run.id):
        advice = "labelling its queued items (`alkit queue import`) may bring another class"
    elif run.status == "waiting" and store.n_spent(run.id) < run.budget:
        advice = f"its next batch (`alkit run --resume {shlex.quote(run_name)}{where}`) may reach another class"
    else:
        advice = f"a larger --budget, or spreading the picks with {spread}, may reach another class"
    return f"every label run {run_name} learns from is class {next(iter(values))!r}, so {what}; {advice}"


def _with_no_model(store: Any, cfg: Any, rows: list[dict[str, Any]], where: str = "") -> list[dict[str, Any]]:
    """``rows`` (run_summaries') with ``no_model``: why a run that cycled has no metrics (its labels are all one
    class), as `status --json` and `run --json` give it (run's had no such key; a black-box check)."""
    for r in rows:
        r["no_model"] = _one_class_note(store, cfg, r["name"], where) if r["cycles"] and not r["metrics"] else None
    return rows


@app.command()
def status(
    json_out: bool = typer.Option(False, "--json", help="Machine-readable output."),
    wide: bool = typer.Option(False, "--wide", help="Every column and metric (the default fits 80 columns)."),
    project: Path = ProjectOpt,
) -> None:
    """One line per run: its name (strategy, scorer options, batch and seed), cycles, labels, status and the
    latest metrics; --wide adds strategy, scorer and seed as columns, and every metric."""
    with user_errors():
        from alkit.report import capacity_text, run_summaries

        proj = load_project(project)
        store = _project_store(proj)
        rows = _with_no_model(store, proj.config, run_summaries(store, proj.config), proj.cli_flag())
    if json_out:
        print(json.dumps(rows, default=str))
        return
    if not rows:
        where = "" if project == Path(".") else f" -p {shlex.quote(str(project))}"  # as every other hint names it
        console.print(f"no runs yet: start one with `alkit run --strategy random --budget N{escape(where)}`")
        return
    print_table(console, summary_table(rows, f"runs in {proj.root}", wide, console.width), wide)
    for r in rows:
        if r.get("no_model"):
            console.print(f"{r['name']}: {escape(r['no_model'])}", highlight=False)
        if r.get("stopped"):
            st = r["stopped"]
            console.print(f"{r['name']}: stopped by {st['rule']} at cycle {st['cycle']} with {st['n_labeled']} labels "
                          f"({escape(st['why'])}); a larger --budget continues it", highlight=False)
        if wide and r.get("capacity"):
            console.print(f"{r['name']}: the learner's cross-validated choice in use: {capacity_text(r['capacity'], r['metrics_n_labeled'])}",
                          highlight=False)
        if r.get("forecast"):
            fc = r["forecast"]
            console.print(f"{r['name']}: predicted {fc['metric']} at the budget (learning from {fc['at']} labels) {fc['mean']:.3f} "
                          f"(5-95 %: {fc['lo']:.3f}-{fc['hi']:.3f})", highlight=False)


@app.command()
def plot(
    out: Optional[Path] = typer.Option(None, "--out", "-o", parser=utf8_path, metavar="<path>", help="Output file, .png or .svg (default: learning_curves.png in the project, beside bench/ and the queue files)."),
    metric: Optional[str] = typer.Option(None, "--metric", help="Metric to plot (default: accuracy, or crps for regression, or their cross-validated cv_ form on a project without a test split; also balanced_accuracy, macro_f1, nll, ece, rmse, mae, ...)."),
    project: Path = ProjectOpt,
) -> None:
    """Learning curves of every run in the project: mean and band over seeds per strategy.

    Runs of one strategy that differ in batch size are separate curves ("margin b20"); a curve
    ends at the label count every one of its seeds has reached."""
    with user_errors():
        from alkit.plots import plot_learning_curves
        from alkit.report import cycles_frame

        proj = load_project(project)
        store = _project_store(proj)
        df = cycles_frame(store, proj.config)
        default = "accuracy" if proj.config.task == "classification" else "crps"
        if metric is None:  # without a test split, the --stop forecast runs log the cross-validated one
            metric = default if default in df.columns or f"cv_{default}" not in df.columns else f"cv_{default}"
        if df.height == 0:
            if store.cycles() and len(store.test_set()[0]) == 0:
                how = ("`alkit init --hide-labels --test-frac F` on a fully labelled file" if proj.config.hide_labels
                       else "labelled rows in the data file, which `alkit init` makes the test split (or --split-col)")
                raise ValueError(f"the project has no test split, so its runs record no metric to plot; make one "
                                 f"with {how}, or run with `--stop forecast` for a cross-validated curve")
            if store.cycles():  # runs exist, none fitted a model (a classification run's labels all of one class)
                raise ValueError("no cycle has metrics yet: no run has fitted a model (a classification run needs "
                                 "labels of two classes; `alkit run` says which class its labels all are)")
            raise ValueError("no cycle has metrics yet: run `alkit run` first")
        logged = [c for c in df.columns if c in METRICS[proj.config.task]]  # not the log's other columns: --metric
        if metric not in logged:  # n_labeled was a polars traceback, fit_s a plot of seconds (an options check)
            from alkit.metrics import bucket_metrics_refusal

            why = bucket_metrics_refusal(metric, store.test_set()[1]) if proj.config.task == "regression" else None
            raise ValueError(why or f"unknown metric {metric!r}; logged metrics: {', '.join(logged)}")
        path = plot_learning_curves(df, metric, out or proj.root / "learning_curves.png", title=f"{proj.root.name}: {metric}")
        drawn = set(df.filter(df[metric].is_not_null())["run"].unique().to_list())
        unfitted = sorted(r.name for r in store.runs() if r.name not in drawn and store.cycles(r.id))
        if unfitted:  # left out of the curves without a word, where bench names them (a black-box check)
            shown = ", ".join(unfitted[:5]) + (" ..." if len(unfitted) > 5 else "")
            why = (f"without a test split only `--stop forecast` runs record {metric}" if metric.startswith("cv_")
                   and len(store.test_set()[0]) == 0 else "no model fitted yet: its first fit is still to come, "
                   "failed or was stopped, or its labels are all of one class; `alkit status` shows each run's state")
            err.print(f"note: {len(unfitted)} run{'s' if len(unfitted) > 1 else ''} with no {metric} yet "
                      f"{'are' if len(unfitted) > 1 else 'is'} not drawn ({escape(shown)}: {why}); the legend counts "
                      "the seeds drawn", highlight=False, style="dim")
    console.print(f"[green]wrote[/] {path}")


@app.command()
def bench(
    budget: int = typer.Option(..., "--budget", "-b", help="Labels per run."),
    strategies_: Optional[str] = typer.Option(None, "--strategies", help="Comma-separated presets, or preset:scorer (e.g. epistemic:laplace); default: every preset that can run on this project, each with its own scorer."),
    seeds: int = typer.Option(3, "--seeds", help="Seeds per strategy (0..N-1)."),
    batch_size: int = typer.Option(10, "--batch-size", help="Labels per cycle."),
    initial: Optional[int] = typer.Option(None, "--initial", help="First, model-free batch size (default: --batch-size)."),
    initial_selector: Optional[InitialSelector] = typer.Option(None, "--initial-selector", help="Model-free selector of every run's first batch (default: each strategy's; random gives every strategy the same first batch of a seed)."),
    max_epochs: Optional[int] = typer.Option(None, "--max-epochs", help="Cap on minibatch epochs per fit, read from 1,000 labels on (default 200); below that a fit is a fixed number of full-batch steps."),
    metric: Optional[str] = typer.Option(None, "--metric", help="Table metric (default accuracy, or crps for regression; also balanced_accuracy, macro_f1, nll, ...)."),
    at: Optional[str] = typer.Option(None, "--at", help="Comma-separated label counts for the fixed-budget columns."),
    target: Optional[float] = typer.Option(None, "--target", help="Metric value for labels-to-target (default: random's final mean; without random, 95 % of the best final mean, 105 % for CRPS)."),
    out_dir: Optional[Path] = typer.Option(None, "--out-dir", parser=utf8_path, metavar="<path>", help="Where the tables go (default: <project>/bench)."),
    wide: bool = typer.Option(False, "--wide", help="Every column and metric (the default fits 80 columns)."),
    project: Path = ProjectOpt,
) -> None:
    """Every strategy x seed on this project (resumable), then the label-efficiency table and plot."""
    use_threads()
    import sys

    with user_errors():
        from alkit.bench import run_bench
        from alkit.plots import plot_learning_curves
        from alkit.report import cycles_frame

        try:
            _preload_cycle_modules()
            if max_epochs is not None and max_epochs < 1:
                raise ValueError(f"--max-epochs must be at least 1, got {max_epochs}")
            res = run_bench(project, budget=budget, strategies=_parse_csv(strategies_, "strategy"), seeds=seeds,
                            batch_size=batch_size, initial=initial, initial_selector=initial_selector,
                            train={"max_epochs": max_epochs} if max_epochs is not None else None, metric=metric,
                            at=parse_counts(at, "--at") if at else None, target=target, out_dir=out_dir,
                            console=console, command="alkit " + " ".join(sys.argv[1:]))
        except (KeyboardInterrupt, Exception) as exc:  # Ctrl-C or SIGTERM: it ended without a word
            if not _is_interrupt(exc):
                raise
            say_interrupted("interrupted: the bench's runs keep every finished cycle; run the same command to continue")
            raise typer.Exit(code=130) from None
        png = res.summary_md.with_name("bench_curves.png")
        proj = load_project(project)
        df = cycles_frame(_store(proj.store_url), proj.config)
        plot_learning_curves(df.filter(df["run"].is_in(res.runs)), res.metric, png, title=f"{res.metric} vs labels")
    for name, why in res.unavailable.items():
        console.print(f"[yellow]left out[/] {name}: {why}")
    for name, why in res.failed.items():
        err.print(f"[bold red]failed[/] {name}: {why}")
    print_table(console, bench_table(res.table, res.metric, wide), wide)
    for note in res.notes:
        console.print(f"note: {note}", highlight=False)
    console.print(f"[green]wrote[/] {res.summary_csv}, {res.summary_md}, {res.cycles_csv}, {png}")
    if res.failed:
        raise typer.Exit(code=1)


@app.command()
def strategies(
    scorer: Optional[Scorer] = typer.Option(None, "--scorer", help="List this scorer's --opt options instead."),
) -> None:
    """List every strategy preset, acquisition, selector and scorer with one line each (or one scorer's options)."""
    if scorer is not None:
        from alkit.registry import get_scorer, learner_class
        from alkit.scorer_options import declared, training

        t = Table(title=f"options of scorer {scorer} (alkit run --scorer {scorer} --opt KEY=VALUE)",
                  box=box.SIMPLE_HEAD, title_justify="left")
        from alkit.runs import value_text

        t.add_column("option", no_wrap=True)
        t.add_column("values", no_wrap=True)  # one token: folded, 'buckets|none' read 'buckets|non' / 'e'
        t.add_column("default", overflow="fold")
        options = [*declared(learner_class(scorer)).values(), *training(learner_class(scorer)).values()]
        for o in options:
            t.add_row(o.name, o.values(), value_text(o.default))  # as -o takes it: none, true, 0.003
        console.print(get_scorer(scorer).summary, highlight=False)
        console.print(t)
        if any(o.name.startswith("train.") for o in options):  # the footnote is about the training settings
            console.print("default none: chosen from the project and its labels (e.g. train.lr_decay, the share of "
                          "the learning rate taken away over a fit past 1,000 labels, 0-1, and train.min_steps: 1 and "
                          "300 on classification of images and encoder embeddings, 0 and 1,000 elsewhere; "
                          "docs/learner.md)", highlight=False)
        return
    from alkit.presets import PRESETS
    from alkit.registry import SCORERS
    from alkit.strategies import SELECTORS

    from alkit.acquisition import ACQUISITIONS, BASELINE_ACQUISITIONS, summary

    t = Table(title="strategies (--strategy)", box=box.SIMPLE_HEAD, title_justify="left")
    t.add_column("name")
    t.add_column("scorer")
    t.add_column("acquisition")
    t.add_column("what it does", overflow="fold")
    for p in PRESETS.values():
        acq = p.acquisition + (f" (regression: {p.regression_acquisition})" if p.regression_acquisition else "")
        if p.selector in ("kcenter", "badge"):  # they pick from embeddings; the score only narrows a large pool
            acq += " (only to choose candidates, pools over --candidates)"
        t.add_row(p.name, p.default_scorer, acq if p.selector not in ("random", "coldstart") else "-", p.summary)
    console.print(t)
    t = Table(title="acquisitions (--acquisition)", box=box.SIMPLE_HEAD, title_justify="left")
    t.add_column("name")
    t.add_column("needs", overflow="fold")
    t.add_column("what it does", overflow="fold")
    for n, cls in ACQUISITIONS.items():
        t.add_row(n, ", ".join(cls.needs), summary(n) + (" \\[baseline]" if n in BASELINE_ACQUISITIONS else ""))
    console.print(t)
    t = Table(title="selectors (used by the presets)", box=box.SIMPLE_HEAD, title_justify="left")
    t.add_column("name")
    t.add_column("what it does", overflow="fold")
    for n, cls in SELECTORS.items():
        t.add_row(n, " ".join((inspect.getdoc(cls) or "").split("\n\n")[0].split()))
    console.print(t)
    t = Table(title="scorers (--scorer)", box=box.SIMPLE_HEAD, title_justify="left")
    t.add_column("name")
    t.add_column("what it does", overflow="fold")
    for s in SCORERS.values():
        t.add_row(s.name, s.summary + (" \\[baseline]" if s.is_baseline else ""))
    console.print(t)


@app.command()
def demo(
    project: Path = typer.Option(Path("alkit-demo"), "--project", "-p", parser=utf8_path, metavar="<path>", help="Directory for the demo project."),
    budget: int = typer.Option(200, "--budget", help="Labels per run."),
    batch_size: int = typer.Option(10, "--batch-size", help="Labels per cycle."),
    seeds: int = typer.Option(2, "--seeds", help="Seeds per strategy."),
    strategies_: str = typer.Option("random,epistemic", "--strategies", help="Comma-separated strategy presets."),
    wide: bool = typer.Option(False, "--wide", help="Every column and metric (the default fits 80 columns)."),
) -> None:
    """Bundled end-to-end demo: digits, random vs epistemic, learning-curve PNG."""
    use_threads()
    with user_errors():
        from alkit.demo import run_demo

        png = run_demo(project, budget=budget, batch_size=batch_size, seeds=seeds,
                       strategies=_parse_csv(strategies_, "strategy") or [], runner=_run_with_progress, console=console)
        from alkit.report import run_summaries

        proj = load_project(project)
        rows = run_summaries(_store(proj.store_url), proj.config)
    print_table(console, summary_table(rows, f"demo runs in {project.resolve()}", wide, console.width), wide)
    console.print(f"[green]learning curves:[/] {png}")


from alkit.cli_queue import queue_app  # noqa: E402
app.add_typer(queue_app, name="queue")


def main() -> None:
    """The `alkit` command.  A usage error (unknown option, a value not among an option's choices)
    is one line and exit 2 like every other refusal, not click's usage block."""
    import sys

    import warnings

    from alkit.errors import Note

    for stream in (sys.stdout, sys.stderr):  # a Latin-1 or cp1252 terminal: '↑' in a table was a crash (exit 1
        # after the run's work was done); what it cannot show becomes '?', the rest is printed
        encoding = (getattr(stream, "encoding", None) or "").lower().replace("-", "")
        if encoding and encoding != "utf8" and hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="replace")
    shown = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):  # noqa: ANN001, ANN202
        if issubclass(category, Note):  # alkit's notes are one line for the user, not a code location
            err.print(f"[yellow]note:[/] {escape(one_line(str(message)))}", highlight=False)
        else:
            shown(message, category, filename, lineno, file, line)

    warnings.showwarning = show
    out = _GuardedStdout(sys.stdout)
    if sys.stdout is not None:  # a closed stdout (>&-, a daemon) is None: rich writes nowhere then, as before
        sys.stdout = out
    import signal

    # SIGTERM (a scheduler's stop, `timeout`) as Ctrl-C: the same message and clean-up (it ended the process
    # without a word); both remembered, for errors an interrupt causes inside an import
    signal.signal(signal.SIGTERM, on_interrupt)
    if signal.getsignal(signal.SIGHUP) is signal.SIG_DFL:  # a closed SSH session ended a logged run without a word
        signal.signal(signal.SIGHUP, on_interrupt)           # (nohup sets it to ignore: left so)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # not where the shell ignores it (nohup, &)
        signal.signal(signal.SIGINT, on_interrupt)
    usage_error = typer.BadParameter.__bases__[0]  # click's UsageError (typer may vendor its own click)
    command = typer.main.get_command(app)
    interrupt_said(clear=True)
    try:
        code = command.main(prog_name="alkit", standalone_mode=False)
    except usage_error as exc:
        if type(exc).__name__ == "NoArgsIsHelpError" and exc.ctx is not None:  # bare `alkit`, `alkit queue`
            print(exc.ctx.get_help())
            sys.exit(0)
        path = exc.ctx.command_path if exc.ctx is not None else "alkit"
        msg = exc.format_message().replace("Value error, ", "")  # typer's pydantic coercion prefix
        option = getattr(exc, "option_name", None)
        if type(exc).__name__ == "NoSuchOption" and option in ("--threads", "--version") and path != "alkit":
            # after the command it got click's nearest option ('Possible options: --head'; a black-box check)
            words = path.split(" ", 1)[1]
            msg = (f"{option} is alkit's own option and goes before the command: `alkit {option}"
                   + (f" N {words} ...` (or ALKIT_THREADS=N)" if option == "--threads" else "`"))
        choice = re.search(r"'([^']+)' is not one of (.*)\.$", msg, re.S)
        if choice:  # another library's name for a strategy ('coreset', 'least_confident'): say alkit's
            from alkit.choices import peer_name_hint

            hint = peer_name_hint(choice.group(1), re.findall(r"'([^']+)'", choice.group(2)))
            msg = f"{msg[:-1]}{hint}." if hint else msg
        err.print(f"[bold red]error:[/] {escape(one_line(msg))} (see {path} -h)", highlight=False)
        sys.exit(2)
    except typer.Abort:  # Ctrl-C outside a run (a run reports its own interruption)
        err.print(INTERRUPTED, highlight=False)
        sys.exit(130)
    except Exception:  # noqa: BLE001 - after a Ctrl-C, what it broke (a half-loaded module) is the interrupt
        if not was_interrupted():
            raise
        code = 130
    if code == 130 and not interrupt_said():  # typer turns a Ctrl-C it meets into exit 130 without a word
        err.print(INTERRUPTED, highlight=False)
    code = code if isinstance(code, int) else 0
    if out.lost is not None and out.lost.errno != errno.EPIPE:  # a pipe's reader that stopped (| head) is no error
        err.print(f"[bold red]error:[/] the output could not be written (standard output: "
                  f"{escape(out.lost.strerror or str(out.lost))}); what the command did is kept", highlight=False)
        code = code or 1
    sys.exit(code)


def process_main() -> None:
    """``main`` as the process of the `alkit` command (alkit.entry, ``python -m alkit.cli``): once it has said
    everything, a Ctrl-C, SIGTERM or SIGHUP in the interpreter's teardown (~1.5 s with torch loaded) is ignored.
    It ended a complete run with exit 130/143/129 and no word (a black-box check of cron-style stops).  SIG_IGN is
    a disposition the teardown keeps; SIGKILL still ends a teardown that hangs.  (Not in ``main``: a test calling
    it in process would leave its own process deaf to Ctrl-C.)"""
    import signal

    try:
        main()
    finally:
        for name in ("SIGINT", "SIGTERM", "SIGHUP"):
            if hasattr(signal, name):
                signal.signal(getattr(signal, name), signal.SIG_IGN)


class _GuardedStdout:
    """Standard output that never stops a command: a full disk behind a redirected stdout aborted a run after
    its first cycle with "[Errno 28] No space left on device" (read as the store's disk), and `status > /dev/full`
    was a traceback (an environment check).  The first failed write is kept (``lost``), later output dropped
    (fd 1 then points at the null device, so Python's own flush at exit does not fail again), and `main` says
    so on stderr with exit 1, as when the store stops answering mid-command."""

    def __init__(self, stream: Any) -> None:
        self._stream, self.lost = stream, None

    def _guard(self, do: Any, default: Any) -> Any:
        if self.lost is None:
            try:
                return do()
            except OSError as exc:
                self.lost = exc
                try:
                    os.dup2(os.open(os.devnull, os.O_WRONLY), self._stream.fileno())
                except (OSError, ValueError, AttributeError):
                    pass
        return default

    def write(self, text: str) -> int:
        return self._guard(lambda: self._stream.write(text), len(text))

    def flush(self) -> None:
        self._guard(self._stream.flush, None)

    def __getattr__(self, name: str) -> Any:  # encoding, isatty, fileno, ... as the stream has them
        return getattr(self._stream, name)


if __name__ == "__main__":
    process_main()
