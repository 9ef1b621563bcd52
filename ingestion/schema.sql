-- The operational RetailMax schema (docs/architecture.md, "The source half"). Safe to run again.
--
-- The constraints hold what the operational system itself guarantees: keys, required
-- columns, unique SKUs. Business rules (quantity > 0, known products, valid e-mails,
-- timestamps not in the future) are deliberately *not* enforced here: the source feeds
-- accept such rows, and catching them is the lakehouse's quality gates' job.
CREATE SCHEMA IF NOT EXISTS retail;

CREATE TABLE IF NOT EXISTS retail.customer_master (
    customer_id   bigint       PRIMARY KEY,
    first_name    text         NOT NULL,
    last_name     text         NOT NULL,
    email         text         NOT NULL,
    phone         text,
    birth_date    date,
    city          text         NOT NULL,
    state         text         NOT NULL,
    country       text         NOT NULL,
    region        text         NOT NULL,
    loyalty_tier  text         NOT NULL,
    created_at    timestamptz  NOT NULL,
    updated_ts    timestamptz  NOT NULL
);

CREATE TABLE IF NOT EXISTS retail.product_catalog (
    product_id    bigint         PRIMARY KEY,
    sku           text           NOT NULL UNIQUE,
    name          text           NOT NULL,
    description   text,
    category      text           NOT NULL,
    brand         text           NOT NULL,
    unit_price    numeric(12,2)  NOT NULL,
    active        boolean        NOT NULL DEFAULT true,
    updated_ts    timestamptz    NOT NULL
);

CREATE TABLE IF NOT EXISTS retail.sales_transactions (
    order_id        bigint         NOT NULL,
    line_item_id    integer        NOT NULL,
    customer_id     bigint         NOT NULL,
    product_id      bigint         NOT NULL,
    quantity        integer        NOT NULL,
    unit_price      numeric(12,2)  NOT NULL,
    discount        numeric(12,2)  NOT NULL DEFAULT 0,
    channel         text           NOT NULL,
    store_id        text,
    status          text           NOT NULL,
    transaction_ts  timestamptz    NOT NULL,
    updated_ts      timestamptz    NOT NULL,
    PRIMARY KEY (order_id, line_item_id)
);

CREATE INDEX IF NOT EXISTS sales_transactions_customer_idx ON retail.sales_transactions (customer_id);

-- Updates and deletes carry the whole old row, so Bronze sees every before-image
-- (partition values included) and no unchanged TOAST value arrives as a placeholder.
ALTER TABLE retail.customer_master    REPLICA IDENTITY FULL;
ALTER TABLE retail.product_catalog    REPLICA IDENTITY FULL;
ALTER TABLE retail.sales_transactions REPLICA IDENTITY FULL;

-- Debezium captures exactly these three tables (publication.autocreate.mode=disabled).
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_publication WHERE pubname = 'retailmax_publication') THEN
        CREATE PUBLICATION retailmax_publication
            FOR TABLE retail.customer_master, retail.product_catalog, retail.sales_transactions;
    END IF;
END
$$;

-- A COPY writes the rows of a table page as one WAL record, so they share one LSN. Debezium
-- 3.7.0 resumes after the whole record when the offset Connect stored last was the first of
-- its rows, and the rest of them never reach Kafka. A BEFORE INSERT row trigger makes COPY
-- insert row by row, one record and one LSN per row, where that resume point is exact.
CREATE OR REPLACE FUNCTION retail.one_wal_record_per_row() RETURNS trigger
    LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$;
CREATE OR REPLACE TRIGGER one_wal_record_per_row BEFORE INSERT ON retail.customer_master
    FOR EACH ROW EXECUTE FUNCTION retail.one_wal_record_per_row();
CREATE OR REPLACE TRIGGER one_wal_record_per_row BEFORE INSERT ON retail.product_catalog
    FOR EACH ROW EXECUTE FUNCTION retail.one_wal_record_per_row();
CREATE OR REPLACE TRIGGER one_wal_record_per_row BEFORE INSERT ON retail.sales_transactions
    FOR EACH ROW EXECUTE FUNCTION retail.one_wal_record_per_row();
