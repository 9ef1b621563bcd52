package org.retailmax.bronze;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParseException;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.core.exc.StreamConstraintsException;
import java.io.IOException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.spark.sql.api.java.UDF1;

/**
 * Why a Kafka message is not exactly one JSON object (RFC 8259), or null: the Bronze
 * decoder's strict check (bronze/decode.py), run in the JVM beside Spark's own parser, which
 * is lenient where this is not: Spark keeps the first of two concatenated objects and ignores
 * what follows one, accepts single quotes, and keeps one of a field given twice.
 */
public final class JsonDefect implements UDF1<String, String> {
    private static final int MAX_DEPTH = 500;
    private static final JsonFactory FACTORY = JsonFactory.builder()
        .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
        .streamReadConstraints(StreamReadConstraints.builder().maxNestingDepth(MAX_DEPTH).build())
        .build();
    private static final Pattern DUPLICATE = Pattern.compile("^Duplicate field '(.*)'");
    private static final Pattern NON_STANDARD = Pattern.compile("^Non-standard token '([^']*)'");

    @Override
    public String call(String text) {
        if (text == null) {
            return "not a JSON object";
        }
        try (JsonParser parser = FACTORY.createParser(text)) {
            if (parser.nextToken() != JsonToken.START_OBJECT) {
                return "not a JSON object";
            }
            parser.skipChildren();
            int next = (int) parser.getCurrentLocation().getCharOffset();
            while (next < text.length() && " \t\n\r".indexOf(text.charAt(next)) >= 0) {
                next++;
            }
            if (next < text.length()) {
                return "something after the JSON object (at character " + next + ")";
            }
            return null;
        } catch (StreamConstraintsException tooDeep) {
            return "JSON nested too deeply";
        } catch (JsonParseException error) {
            String message = error.getOriginalMessage();
            Matcher duplicate = DUPLICATE.matcher(message);
            if (duplicate.find()) {
                return "field " + duplicate.group(1) + " given twice";
            }
            Matcher constant = NON_STANDARD.matcher(message);
            if (constant.find()) {
                return constant.group(1) + " is not a JSON value";
            }
            return "not a JSON object";
        } catch (IOException error) {
            return "not a JSON object";
        }
    }
}
