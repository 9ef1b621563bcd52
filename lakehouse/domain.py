"""RetailMax's business vocabulary: the values the source systems use and the quality
rules accept. One list each, read by the data generators and by the table declarations."""

CHANNELS = ("web", "mobile", "store", "marketplace")
ORDER_STATUSES = ("pending", "completed", "cancelled", "returned")
EVENT_TYPES = ("page_view", "product_view", "search", "add_to_cart", "remove_from_cart",
               "checkout", "purchase")
# One @, no spaces, a dot in the domain: what the shop can send mail to.
EMAIL_PATTERN = r"^[^@\s]+@[^@\s]+\.[A-Za-z]{2,}$"
