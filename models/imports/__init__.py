"""CSV imports, shared by every wing that takes a file: parse, dry run with a per-line report, commit.

- ``tables.py``: an import's staged lines, kept for ``Policy.import_keep`` (an hour).
- ``csv_file.py``: reading the file: UTF-8 with or without a BOM, a header, bounded lines.
- ``runs.py``: the dry run and the commit, streamed in batches; the wing supplies the line
  checker (:class:`runs.LineChecker`) that says each line's fate and applies it.
"""
