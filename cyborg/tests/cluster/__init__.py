"""Clusters operators run (Galera, RabbitMQ, HAProxy), started on loopback."""
