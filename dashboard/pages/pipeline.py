"""Pipeline view: per table its last commit, its lag behind its input and behind the source
against its freshness target, the quarantine
tables, the quality rules failing now with a sample, Bronze's throughput, the services, and
links to the other pages of the stack."""

from __future__ import annotations

import streamlit as st

from dashboard import panels, ui
from medallion.tables import freshness_targets

ui.services_strip()
st.title("Pipeline health")


@st.fragment(run_every=ui.refresh_seconds())
def pipeline_panels() -> None:
    now = ui.now()
    st.caption(
        f"As of {now:%Y-%m-%d %H:%M:%S} UTC; refreshes every {ui.refresh_seconds()} s. "
        "Lag behind input: how long the oldest change a table has not taken yet has waited "
        "(in Kafka for Bronze, in an input table's commit for Silver and Gold). Lag behind "
        "source: the age of the oldest change at the source (a Postgres commit, an event) "
        "the table does not reflect yet, measured against its freshness target."
    )
    states = ui.table_states()
    rows = ui.read(ui.quarantine_rows)
    results = ui.read(ui.quality_results)
    failing = panels.latest_failures(results) if results is not None else None
    written = sum(state.last_commit is not None for state in states)
    columns = st.columns(3)
    columns[0].metric("Tables written", f"{written} of {len(states)}")
    columns[1].metric("Rows kept out", "?" if rows is None else f"{int(rows['rows'].sum()):,}")
    columns[2].metric("Rules failing now", "?" if failing is None else f"{len(failing):,}")

    st.subheader("Tables: Postgres and Kafka → Bronze → Silver → Gold")
    # Tall enough for every table: a scrolled table hides the end of the chain, Gold.
    st.dataframe(
        panels.freshness(states, now, freshness_targets()),
        hide_index=True,
        width="stretch",
        height=38 + 35 * len(states),
        column_config={"last commit (UTC)": st.column_config.DatetimeColumn(format="YYYY-MM-DD HH:mm:ss")},
    )

    left, right = st.columns(2)
    with left:
        st.subheader("Quarantine")
        if rows is not None:
            if rows.empty:
                st.success("No row or message is kept out.")
            else:
                st.dataframe(panels.quarantine_counts(rows), hide_index=True, width="stretch")
    with right:
        st.subheader("Bronze rows landed per minute")
        commits = ui.read(ui.bronze_commits)
        if commits is not None:
            landed = panels.throughput(commits, now)
            if landed.empty or not landed.to_numpy().any():
                st.info("No Bronze commit in the last 30 minutes.")
            else:
                st.bar_chart(landed)

    st.subheader("Quality rules failing in their latest validation")
    if failing is not None:
        if failing.empty:
            st.success("Every rule passed its latest validation.")
        else:
            st.dataframe(failing, hide_index=True, width="stretch")

    left, right = st.columns(2)
    with left:
        st.subheader("Services")
        statuses = ui.read(ui.services)
        if statuses is not None:
            st.dataframe(
                [
                    {"service": s.name, "healthy": s.healthy, "address": s.address, "detail": s.detail}
                    for s in statuses
                ],
                hide_index=True,
                width="stretch",
            )
    with right:
        st.subheader("Other pages")
        for page in ui.pages():
            st.markdown(
                f"- [{page.name}]({page.address}): {page.detail}"
                if page.healthy
                else f"- {page.name} ({page.address}): not running"
            )


pipeline_panels()
