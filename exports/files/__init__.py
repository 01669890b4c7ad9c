"""Export files: CSV, XLSX and zip writers, producing a job's file from one warehouse
snapshot, file names, and removing files from the export file store."""
