"""Gradio web app mounted on the FastAPI app."""
