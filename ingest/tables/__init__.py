"""Financial tables: pre-checked on a page's text (``precheck``), found on PDF pages (``pdf``, ``ruled``,
``detect``, over ``layout`` and ``pdfium``), normalised into typed SQL tables (``typed``, with ``grid``,
``captions``, ``rows``, ``numbers``, ``periods``) and catalogued for the BI planner (``catalogue``,
``vectors``). Modules are imported by their full path; nothing is re-exported here."""
