-- A segment per customer from their profile alone: the rules read no clock and no other
-- customer, so the same profile always gets the same segment and a rerun changes nothing.
SELECT customer_id, region, loyalty_tier, lifetime_value, order_count, average_order_value,
       CASE
           WHEN order_count = 0 THEN 'prospect'
           WHEN order_count >= 5 AND lifetime_value >= 2500 THEN 'champion'
           WHEN average_order_value >= 400 THEN 'big_spender'
           WHEN order_count >= 3 THEN 'loyal'
           WHEN order_count = 1 THEN 'one_time'
           ELSE 'occasional'
       END AS segment,
       last_updated_ts AS segmentation_ts
FROM profiles
