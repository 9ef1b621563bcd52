-- Per sku and day, over the stock positions (sku, location) whose latest report fell on
-- that day: Bronze keeps each position's newest report only, so this is the current stock
-- picture broken down by when each location last checked it.
WITH positions AS (
    SELECT sku, location_id, quantity_on_hand, change_qty, update_ts,
           to_date(update_ts) AS date
    FROM inventory
)
SELECT sku, date,
       count(*) AS locations_reported,
       CAST(sum(quantity_on_hand) AS BIGINT) AS quantity_on_hand,
       CAST(sum(change_qty) AS BIGINT) AS last_change_qty,
       count_if(quantity_on_hand = 0) AS locations_out_of_stock,
       max(update_ts) AS last_checked_ts
FROM positions
GROUP BY sku, date
