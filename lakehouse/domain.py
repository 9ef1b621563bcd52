"""RetailMax's business vocabulary: the values the source systems use and the quality
rules accept. One list each, read by the data generators and by the table declarations."""

from email_validator import EmailNotValidError, validate_email

CHANNELS = ("web", "mobile", "store", "marketplace")
ORDER_STATUSES = ("pending", "completed", "cancelled", "returned")
EVENT_TYPES = (
    "page_view",
    "product_view",
    "search",
    "add_to_cart",
    "remove_from_cart",
    "checkout",
    "purchase",
)


def email_problem(address: str) -> str | None:
    """Why the shop could not send mail to `address`, or None: the syntax of RFC 5321/5322
    as the email-validator library reads it (a maintained one; a regex either refuses real
    addresses or passes broken ones), without asking DNS, so the verdict does not change
    with the network."""
    try:
        validate_email(address, check_deliverability=False)
    except EmailNotValidError as error:
        return str(error)
    return None
