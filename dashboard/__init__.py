"""The dashboard `make up` serves on DASHBOARD_PORT (8501): Gold's business numbers and the
pipeline's health on two pages, read-only, refreshing themselves.

Layout: `panels.py` computes what each panel shows from small frames (pure, unit tested),
`sources.py` reads the business pages' Gold and Silver frames without a JVM (the pipeline
page's state comes from monitoring/state.py), `ui.py` holds what both pages share (cached
readers, the services strip), and `app.py` with `pages/` lays them out with Streamlit.
"""
