"""The LangGraph agent: routing, retrieval RAG, long-context reading, BI over tables, citations."""
