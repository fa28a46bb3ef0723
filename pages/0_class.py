"""Only for a fresh server's first visitor of /class: until some session has called st.navigation, Streamlit
serves the files of pages/ by name (its pages-directory mode), and /class names no file there (the Class page
is pages/classroom.py), so the browser showed "Page not found" over the page. Streamlit reads this file as
the page "class" (a leading number is dropped), and it only hands the visit to app.py's navigation, which
draws pages/classroom.py. Never listed: app.py's st.navigation names the pages."""

from components.frame import ensure_app_frame

ensure_app_frame()
