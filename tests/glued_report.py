"""A cash flow statement whose row labels lost spaces the way a PDF text layer loses them ("Purchases
ofproperty"): the ingest test of table vectors and the agent test of glued words read the same report."""

REPORT = """<html><body><h1>Tallis Corp annual report 2019</h1>
<p>Consolidated statement of cash flows (in millions)</p>
<table>
<tr><th></th><th>2019</th><th>2018</th></tr>
<tr><td>Net cash provided by operating activities</td><td>2,410</td><td>2,205</td></tr>
<tr><td>Purchases ofproperty, plant and equipment</td><td>(812)</td><td>(760)</td></tr>
<tr><td>Proceeds fromsale ofbusinesses</td><td>95</td><td>40</td></tr>
<tr><td>Net cash used in investing activities</td><td>(717)</td><td>(720)</td></tr>
</table></body></html>"""
ROWS = 4
