package org.retailmax.ingestion;

import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.common.config.AbstractConfig;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.ConnectRecord;
import org.apache.kafka.connect.data.Field;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.json.JsonConverter;
import org.apache.kafka.connect.transforms.Transformation;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps a change event that Kafka would refuse from stopping the connector: the last
 * transform of the Debezium connector (ingestion/debezium-postgres.json).
 *
 * <p>Without it, one row whose event is larger than the producer's max.request.size fails
 * the connector's only task, and no later change of any table is captured. With it, an
 * event over {@code max.bytes} first loses its before-image (an update carries the whole old
 * row, REPLICA IDENTITY FULL, which Bronze needs only to see a row move between partitions).
 * If it is still over, it loses its after-image too, keeping its key, op and source
 * position. Either way it gains an {@code oversized} field: its size, the limit, and which
 * images were left out. Bronze lands the first kind where no move can be missed, and
 * quarantines the rest with that reason (bronze/decode.py); every other change flows on.
 *
 * <p>The size is the event's key and value as the connector's converters write them:
 * JSON without schemas. Most events are measured by a cheap bound (each character of a
 * string takes at most six bytes in JSON) and serialized only when that bound is over.
 */
public final class OversizedChangeGuard<R extends ConnectRecord<R>> implements Transformation<R> {
    public static final String MAX_BYTES = "max.bytes";
    public static final String OVERSIZED = "oversized";
    private static final int JSON_BYTES_PER_CHAR = 6;
    private static final ConfigDef CONFIG = new ConfigDef().define(
        MAX_BYTES,
        ConfigDef.Type.INT,
        ConfigDef.NO_DEFAULT_VALUE,
        ConfigDef.Range.atLeast(1024),
        ConfigDef.Importance.HIGH,
        "The largest event (key plus value, in bytes of JSON) let through; keep it below the "
            + "producer's max.request.size and the broker's message.max.bytes.");
    private static final Schema SIZE_SCHEMA = SchemaBuilder.struct()
        .name("org.retailmax.ingestion.Oversized")
        .field("bytes", Schema.INT64_SCHEMA)
        .field("limit", Schema.INT64_SCHEMA)
        .field("left_out", Schema.STRING_SCHEMA)
        .optional()
        .build();
    private static final Logger LOG = LoggerFactory.getLogger(OversizedChangeGuard.class);

    private final JsonConverter keys = new JsonConverter();
    private final JsonConverter values = new JsonConverter();
    private int maxBytes;

    @Override
    public void configure(Map<String, ?> configs) {
        maxBytes = new AbstractConfig(CONFIG, configs).getInt(MAX_BYTES);
        keys.configure(Map.of("schemas.enable", "false"), true);
        values.configure(Map.of("schemas.enable", "false"), false);
    }

    @Override
    public R apply(R record) {
        if (upperBound(record.key()) + upperBound(record.value()) <= maxBytes) {
            return record;
        }
        long bytes = size(record, record.value());
        if (bytes <= maxBytes) {
            return record;
        }
        Struct withoutBefore = without(record.value(), Set.of("before"), bytes);
        boolean hasAfter = withoutBefore.schema().field("after") != null && withoutBefore.get("after") != null;
        Struct guarded = hasAfter && size(record, withoutBefore) <= maxBytes
            ? withoutBefore
            : without(record.value(), Set.of("before", "after"), bytes);
        LOG.warn(
            "Change event of {} bytes on {} (key {}) is over the {}-byte limit: sent without {}",
            bytes, record.topic(), record.key(), maxBytes, guarded.getStruct(OVERSIZED).getString("left_out"));
        return record.newRecord(
            record.topic(), record.kafkaPartition(), record.keySchema(), record.key(),
            guarded.schema(), guarded, record.timestamp(), record.headers());
    }

    private long size(R record, Object value) {
        Schema schema = value instanceof Struct struct ? struct.schema() : record.valueSchema();
        return serializedSize(keys, record, record.keySchema(), record.key())
            + serializedSize(values, record, schema, value);
    }

    /** The event with the images named `leftOut` set to null, every other field of a Debezium
     * envelope kept, and the `oversized` field added. */
    private Struct without(Object value, Set<String> leftOut, long bytes) {
        SchemaBuilder schema = SchemaBuilder.struct().name("org.retailmax.ingestion.OversizedChange");
        Struct envelope = value instanceof Struct struct ? struct : null;
        if (envelope != null) {
            for (Field field : envelope.schema().fields()) {
                schema.field(field.name(), field.schema());
            }
        }
        Schema built = schema.field(OVERSIZED, SIZE_SCHEMA).build();
        Struct guarded = new Struct(built);
        if (envelope != null) {
            for (Field field : envelope.schema().fields()) {
                guarded.put(field.name(), leftOut.contains(field.name()) ? null : envelope.get(field));
            }
        }
        Struct size = new Struct(SIZE_SCHEMA)
            .put("bytes", bytes)
            .put("limit", (long) maxBytes)
            .put("left_out", leftOut.size() == 1 ? "before" : "before and after");
        return guarded.put(OVERSIZED, size);
    }

    private static long serializedSize(
        JsonConverter converter, ConnectRecord<?> record, Schema schema, Object value) {
        byte[] json = converter.fromConnectData(record.topic(), schema, value);
        return json == null ? 0 : json.length;
    }

    /** At least the bytes `value` takes as JSON: its strings at six bytes a character, anything else at 32. */
    private static long upperBound(Object value) {
        if (value == null) {
            return 4;
        }
        if (value instanceof String text) {
            return 2L + (long) JSON_BYTES_PER_CHAR * text.length();
        }
        if (value instanceof byte[] raw) {
            return 2L + 4L * ((raw.length + 2) / 3);
        }
        if (value instanceof Struct struct) {
            long total = 2;
            for (Field field : struct.schema().fields()) {
                total += field.name().getBytes(StandardCharsets.UTF_8).length + 4 + upperBound(struct.get(field));
            }
            return total;
        }
        if (value instanceof Map<?, ?> map) {
            long total = 2;
            for (Map.Entry<?, ?> entry : map.entrySet()) {
                total += upperBound(entry.getKey()) + upperBound(entry.getValue()) + 2;
            }
            return total;
        }
        if (value instanceof Iterable<?> items) {
            long total = 2;
            for (Object item : items) {
                total += upperBound(item) + 1;
            }
            return total;
        }
        return 32;
    }

    @Override
    public ConfigDef config() {
        return CONFIG;
    }

    @Override
    public void close() {
        keys.close();
        values.close();
    }
}
