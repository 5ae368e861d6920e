"""Rendering a usage report: the plots and the pie as PNG (`plots`, `plot_metrics`,
`plot_units`, `sizes`; matplotlib's object API), the PDF (`pdf`, `summary_rows`, `figures_text`;
reportlab), user-written text made safe to show (`shown_text`), the cache of drawn images and
PDFs (`cache`, `rendered`) and matplotlib's own directory (`matplotlib_dir`). No Django.
"""
