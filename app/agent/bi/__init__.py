"""BI over tables: a question read into a typed program over the in-scope tables' grounded cells (``planner``),
run as SQL by the bi node (``app.agent.nodes_bi``). Modules are imported by their full path; nothing is
re-exported here."""
