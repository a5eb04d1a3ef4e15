"""lexicon-rag application layer: settings, agent, REST API, batch jobs, CLI."""
