pub mod hist;
