"""The dashboard `make up` serves on DASHBOARD_PORT (8501): Gold's business numbers and the
pipeline's health on two pages, read-only, refreshing themselves.

Layout: `panels.py` computes what each panel shows from small frames (pure, unit tested),
`sources.py` reads those frames without a JVM, `ui.py` holds what both pages share (cached
readers, the services strip), and `app.py` with `pages/` lays them out with Streamlit.
"""
