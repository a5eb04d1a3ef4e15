"""Clause kinds as data (``taxonomy``), the terms-and-connectors matcher their expressions are read by
(``connectors``), the clause units of a document (``units``), the one general clause finder (``finder``) and a
tenant's own kinds (``playbook``)."""
