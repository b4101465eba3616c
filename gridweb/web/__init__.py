"""The site's pages: home, health check (later: scenario builder, runs, gallery)."""
