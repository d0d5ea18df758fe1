"""Import other tools' autotuning logs into the dataset tables.

- :mod:`corpus.ingest.helion`: Helion's autotune CSV and its ``.meta.jsonl`` sidecar;
- :mod:`corpus.ingest.tritonparse`: tritonparse's NDJSON traces.

Each importer is versioned against the format it reads (``FORMATS``), derives our keys as
everywhere else, keeps the tool's own ids as provenance (``source_ref``) and commits one run
at a time through :class:`schemas.DatasetWriter`.
"""
