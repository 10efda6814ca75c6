"""Pecan controllers: thin handlers from HTTP to objects and back."""
