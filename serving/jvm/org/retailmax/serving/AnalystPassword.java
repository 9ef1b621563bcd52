package org.retailmax.serving;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import javax.security.sasl.AuthenticationException;
import org.apache.hive.service.auth.PasswdAuthenticationProvider;

/**
 * The JDBC server's sign-in (hive.server2.authentication=CUSTOM): one analyst account whose
 * name and password the server's environment carries (ANALYST_USER, ANALYST_PASSWORD from the
 * project's .env). Compared in constant time, so the time of a refusal says nothing about how
 * much of the password was right.
 */
public final class AnalystPassword implements PasswdAuthenticationProvider {
    private final byte[] user = required("ANALYST_USER");
    private final byte[] password = required("ANALYST_PASSWORD");

    @Override
    public void Authenticate(String user, String password) throws AuthenticationException {
        boolean userMatches = MessageDigest.isEqual(bytes(user), this.user);
        boolean passwordMatches = MessageDigest.isEqual(bytes(password), this.password);
        if (!(userMatches && passwordMatches)) {
            throw new AuthenticationException(
                "wrong user name or password for the RetailMax JDBC server "
                    + "(the analyst account is ANALYST_USER / ANALYST_PASSWORD in .env; "
                    + "`make status` shows it)");
        }
    }

    private static byte[] bytes(String value) {
        return value == null ? new byte[0] : value.getBytes(StandardCharsets.UTF_8);
    }

    private static byte[] required(String variable) {
        String value = System.getenv(variable);
        if (value == null || value.isEmpty()) {
            // Refusing everyone beats accepting anyone: a server without the variable is
            // misconfigured, and its log says so at the first sign-in.
            throw new IllegalStateException(variable + " is not set in the JDBC server's "
                + "environment: run `make env`, then restart the server (`make services`)");
        }
        return value.getBytes(StandardCharsets.UTF_8);
    }
}
