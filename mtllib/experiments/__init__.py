"""Experiments layer: the code that trains and evaluates what a chapter needs (IAP runs, task models for
similarity), built from the layers below."""
