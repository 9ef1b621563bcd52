-- One row per sku and day with a completed sale or a stock report. The targets (units_sold,
-- revenue) are the day's own; every feature after them reads earlier days only, through
-- frames that end one day before the row's (RANGE over day numbers, so a day without a row
-- counts as a day without sales). The 28-day reach is HISTORY_DAYS in gold/tables.py.
WITH sold AS (
    SELECT sku, order_date AS date,
           CAST(sum(quantity) AS BIGINT) AS units_sold,
           sum(line_total) AS revenue
    FROM orders
    WHERE status = 'completed'
    GROUP BY sku, order_date
),
days AS (
    SELECT coalesce(s.sku, i.sku) AS sku,
           coalesce(s.date, i.date) AS date,
           coalesce(s.units_sold, 0) AS units_sold,
           CAST(coalesce(s.revenue, 0) AS DECIMAL(18, 2)) AS revenue,
           i.quantity_on_hand AS stock_on_hand,
           unix_date(coalesce(s.date, i.date)) AS day_number
    FROM sold s
    FULL OUTER JOIN inventory i ON i.sku = s.sku AND i.date = s.date
)
SELECT sku, date, units_sold, revenue, stock_on_hand,
       dayofweek(date) AS day_of_week,
       coalesce(sum(units_sold) OVER day_before, 0) AS units_lag_1,
       coalesce(sum(units_sold) OVER week_ago, 0) AS units_lag_7,
       coalesce(sum(units_sold) OVER week_before, 0) AS units_rolling_7,
       coalesce(sum(units_sold) OVER four_weeks_before, 0) AS units_rolling_28,
       CAST(coalesce(sum(revenue) OVER four_weeks_before, 0) AS DECIMAL(18, 2))
           AS revenue_rolling_28,
       last(stock_on_hand, TRUE) OVER four_weeks_before AS stock_last_reported
FROM days
WINDOW day_before AS (PARTITION BY sku ORDER BY day_number
                      RANGE BETWEEN 1 PRECEDING AND 1 PRECEDING),
       week_ago AS (PARTITION BY sku ORDER BY day_number
                    RANGE BETWEEN 7 PRECEDING AND 7 PRECEDING),
       week_before AS (PARTITION BY sku ORDER BY day_number
                       RANGE BETWEEN 7 PRECEDING AND 1 PRECEDING),
       four_weeks_before AS (PARTITION BY sku ORDER BY day_number
                             RANGE BETWEEN 28 PRECEDING AND 1 PRECEDING)
