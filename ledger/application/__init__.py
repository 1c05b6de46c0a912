"""The application: commands in, events and log positions out, reads from the views."""
