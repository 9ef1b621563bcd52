-- Completed sales per order day, product category and customer region. A group is
-- recomputed whole whenever one of its lines changes, joins or leaves it, so updates and
-- deletes are exact (summing only the changed lines would not be).
SELECT order_date, product_category, region,
       CAST(sum(line_total) AS DECIMAL(18, 2)) AS total_sales_amount,
       count(DISTINCT order_id) AS total_orders,
       CAST(sum(quantity) AS BIGINT) AS units_sold,
       count(*) AS line_count,
       max(last_updated_ts) AS aggregation_ts,
       date_format(order_date, 'yyyy-MM') AS order_month
FROM orders
WHERE status = 'completed'
GROUP BY order_date, product_category, region
