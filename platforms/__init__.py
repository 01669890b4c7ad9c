"""Commerce platforms: one connector interface, a demo platform, later Shopify."""
