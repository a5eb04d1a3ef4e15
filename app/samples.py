"""The shipped sample corpus for ``lexicon serve --samples`` (``make run``), without touching user documents.

The samples go to the tenant of the first configured API key (the key ``serve`` prints, so any
``LEXICON_API_KEYS`` still shows them to some key) under names no upload can take: ``[sample] <file>``
(an upload under such a name is refused, ``app.uploads.clean_name``). The files are written once with stable bytes
(``ingest.samples``), so a restart re-ingests nothing and never replaces a user's document.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

SAMPLE_PREFIX = "[sample] "


def samples_key(settings) -> Optional[str]:
    """The API key whose tenant holds the samples: the first configured one."""
    return next(iter(settings.api_keys), None)


def sample_name(filename: str) -> str:
    return SAMPLE_PREFIX + filename


def load_samples(service) -> dict:
    """Write (once) and ingest the sample corpus; -> the job dict plus ``tenant`` and ``key``."""
    from ingest.samples import write_sample_corpus

    key = samples_key(service.settings)
    if key is None:
        return {"tenant": None, "key": None, "done": 0, "failed": 0, "documents": []}
    tenant = service.settings.api_keys[key]
    paths = write_sample_corpus(Path(service.settings.data_dir) / "samples")
    job_id = service.kb.create_job(paths, tenant, [sample_name(p.name) for p in paths])
    service.kb.run_job(job_id)
    return {**service.job(tenant, job_id), "tenant": tenant, "key": key}
