"""Three questions analysts ask Gold most, written in the SQL that Spark and DataFusion share,
so that every read path (JDBC server, `lakehouse sql`, `lakehouse query`) answers the same
text. The benchmark times them; the serving tests check every path gives the same rows."""

DAILY_SALES = "gold.hudi_daily_sales_gold"

GOLD_QUERIES = {
    "sales_by_region_on_a_day": (
        "SELECT region, sum(total_sales_amount) AS sales, sum(total_orders) AS orders, "
        "sum(units_sold) AS units "
        f"FROM {DAILY_SALES} WHERE order_date = (SELECT max(order_date) FROM {DAILY_SALES}) "
        "GROUP BY region"
    ),
    "top_categories_in_a_month": (
        "SELECT product_category, sum(total_sales_amount) AS sales "
        f"FROM {DAILY_SALES} WHERE order_month = (SELECT max(order_month) FROM {DAILY_SALES}) "
        "GROUP BY product_category ORDER BY sales DESC LIMIT 5"
    ),
    "customers_per_segment": (
        "SELECT segment, count(*) AS customers FROM gold.hudi_customer_segments_gold GROUP BY segment"
    ),
}
