"""The pool store: SQL state (items, labels, runs, selections, cycles) and Parquet features."""
