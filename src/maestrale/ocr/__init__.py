"""OCR of PDFs and images: POST /v1/ocr."""
