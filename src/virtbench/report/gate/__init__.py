"""The regression gate of `compare BASE NEW` in the formats CI systems read: JUnit XML, GitHub
Actions workflow commands and job summary, GitLab Code Quality and metrics reports, and a
Markdown table for a pull-request comment. Each module renders text; the CLI writes it."""
