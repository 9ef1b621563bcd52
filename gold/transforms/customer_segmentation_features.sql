-- Segmentation features per customer, as of the newest completed order in the data (no clock:
-- a rerun over the same inputs gives the same rows). Recency, frequency and monetary value
-- are scored 1-5 by quintile over the customers who bought: a score is the fifth of that
-- population at or below the customer's value, so customers with equal values share a score,
-- and one customer's change can move others' scores (the declaration recomputes them all).
WITH as_of AS (
    SELECT to_date(max(last_order_ts)) AS as_of_date FROM profiles
),
category_spend AS (
    SELECT customer_id, product_category, sum(line_total) AS spend
    FROM orders
    WHERE status = 'completed'
    GROUP BY customer_id, product_category
),
preferred AS (
    SELECT customer_id, product_category AS preferred_category
    FROM (
        SELECT customer_id, product_category,
               row_number() OVER (PARTITION BY customer_id
                                  ORDER BY spend DESC, product_category ASC) AS place
        FROM category_spend
    ) ranked
    WHERE place = 1
),
rfm AS (
    SELECT p.customer_id, p.region, p.average_order_value, a.as_of_date,
           datediff(a.as_of_date, to_date(p.last_order_ts)) AS recency_days,
           p.order_count AS frequency,
           p.lifetime_value AS monetary,
           greatest(datediff(a.as_of_date, to_date(c.created_at)), 0) AS tenure_days,
           floor(months_between(a.as_of_date, c.birth_date) / 12) AS age
    FROM profiles p
    CROSS JOIN as_of a
    LEFT JOIN customers c ON c.customer_id = p.customer_id
),
scored AS (
    SELECT *,
           -- round: cume_dist is a double, and 5 * 0.6 must score 3, not 4.
           CAST(ceil(round(5 * cume_dist() OVER (PARTITION BY frequency > 0
                                                  ORDER BY recency_days DESC), 9)) AS INT) AS r,
           CAST(ceil(round(5 * cume_dist() OVER (PARTITION BY frequency > 0
                                                  ORDER BY frequency), 9)) AS INT) AS f,
           CAST(ceil(round(5 * cume_dist() OVER (PARTITION BY frequency > 0
                                                  ORDER BY monetary), 9)) AS INT) AS m
    FROM rfm
)
SELECT s.customer_id, s.as_of_date, s.recency_days, s.frequency, s.monetary,
       CASE WHEN s.frequency > 0 THEN s.r END AS r_score,
       CASE WHEN s.frequency > 0 THEN s.f END AS f_score,
       CASE WHEN s.frequency > 0 THEN s.m END AS m_score,
       CASE WHEN s.frequency > 0 THEN concat(s.r, s.f, s.m) END AS rfm_segment,
       s.average_order_value, pr.preferred_category, s.tenure_days, s.region,
       CASE
           WHEN s.age IS NULL THEN 'unknown'
           WHEN s.age < 25 THEN 'under 25'
           WHEN s.age < 35 THEN '25-34'
           WHEN s.age < 45 THEN '35-44'
           WHEN s.age < 55 THEN '45-54'
           WHEN s.age < 65 THEN '55-64'
           ELSE '65 and over'
       END AS age_band
FROM scored s
LEFT JOIN preferred pr ON pr.customer_id = s.customer_id
