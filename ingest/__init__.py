"""Document ingestion: parse, chunk with provenance, extract tables to SQL, embed, index."""
