"""The dashboard's entry point: `streamlit run dashboard/app.py` (what `lakehouse dashboard`
and `make up` start). Two pages: the business numbers of Gold, and the pipeline's health."""

from __future__ import annotations

import streamlit as st

st.set_page_config(page_title="RetailMax Lakehouse", page_icon=":bar_chart:", layout="wide")
st.navigation(
    [
        st.Page("pages/business.py", title="Business", icon=":material/monitoring:", default=True),
        st.Page("pages/pipeline.py", title="Pipeline", icon=":material/account_tree:"),
    ]
).run()
