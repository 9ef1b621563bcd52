-- One row per web session, from all of its events whatever order they arrived in.
WITH events AS (
    SELECT session_id, customer_id, event_type, device, event_ts FROM clicks
)
SELECT session_id,
       max(customer_id) AS customer_id,
       min(event_ts) AS session_start_ts,
       max(event_ts) AS session_end_ts,
       CAST((unix_micros(max(event_ts)) - unix_micros(min(event_ts))) / 1000000 AS DOUBLE)
           AS duration_seconds,
       count(*) AS event_count,
       count_if(event_type = 'page_view') AS page_views,
       count_if(event_type = 'product_view') AS product_views,
       count_if(event_type = 'search') AS searches,
       count_if(event_type = 'add_to_cart') AS add_to_carts,
       count_if(event_type = 'remove_from_cart') AS remove_from_carts,
       count_if(event_type = 'checkout') AS checkouts,
       count_if(event_type = 'purchase') AS purchases,
       count_if(event_type = 'purchase') > 0 AS converted,
       -- The events no count above took in: a type nobody modelled yet.
       count(*) - (page_views + product_views + searches + add_to_carts + remove_from_carts
                   + checkouts + purchases) AS other_events,
       max_by(device, event_ts) AS device,
       to_date(min(event_ts)) AS session_date
FROM events
GROUP BY session_id
